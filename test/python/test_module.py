"""The ridge module returns what the CLI prints for the same options."""
import json
import os
import subprocess

import pytest
import ridge

SRC = os.environ["RIDGE_SRC"]
CLI = os.environ["RIDGE_BIN"]
DATA = os.environ.get("RIDGE_TESTDATA", "/usr/include/onnx/backend/test/data")
MLP = os.path.join(SRC, "examples", "mlp.onnxtxt")
CONV = os.path.join(DATA, "node", "test_conv_with_strides_padding", "model.onnx")
WIDE = os.path.join(SRC, "test", "plan", "Inputs", "mlp-wide.onnxtxt")


def cli(*args):
    out = subprocess.run([CLI, *args, "--format", "json"], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def test_analyze_is_the_cli_json():
    assert ridge.analyze(MLP, dims={"batch": 32}) == cli("analyze", MLP, "--dim", "batch=32")


def test_free_dims_give_the_cli_formulas():
    attn = os.path.join(SRC, "examples", "attention-symbolic.onnxtxt")
    got = ridge.analyze(attn)
    assert got == cli("analyze", attn)
    assert got["options"]["counts"] == "formulas" and got["needs_binding"] == ["batch", "seq"]
    assert got["totals"]["fwd"]["flops"] == "260*batch*seq^2 + 24574*batch*seq"
    # Inference and recomputation with free dims: formulas too, as the CLI's.
    inf = ridge.analyze(attn, inference=True)
    assert inf == cli("analyze", attn, "--inference")
    assert inf["options"]["mode"] == "inference" and isinstance(inf["memory"]["activations"], str)
    full = ridge.analyze(attn, recompute="full")
    assert full == cli("analyze", attn, "--recompute", "full")
    assert isinstance(full["totals"]["recompute_flops"], str)


def test_analyze_options_are_the_cli_flags():
    got = ridge.analyze(MLP, dims={"batch": 64}, device="A100-SXM4-80GB", dtype="bf16",
                        optimizer="sgd", recompute="full", time_model="roofline")
    want = cli("analyze", MLP, "--dim", "batch=64", "--device", "A100-SXM4-80GB", "--dtype",
               "bf16", "--optimizer", "sgd", "--recompute", "full", "--time-model", "roofline")
    assert got == want
    assert got["options"]["dtype"] == "bf16" and got["device"]["name"] == "A100-SXM4-80GB"


def test_inference_is_the_cli_json():
    got = ridge.analyze(MLP, dims={"batch": 8}, inference=True)
    assert got == cli("analyze", MLP, "--dim", "batch=8", "--inference")
    assert got["options"]["mode"] == "inference"


@pytest.mark.skipif(not os.path.exists(CONV), reason="libonnx-testdata is not installed")
def test_testdata_sample_field_by_field():
    got, want = ridge.analyze(CONV), cli("analyze", CONV)
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key] == want[key], key


def test_bytes_input():
    with open(MLP, "rb") as f:
        data = f.read()
    got = ridge.analyze(data, dims={"batch": 32})
    want = ridge.analyze(MLP, dims={"batch": 32})
    assert got["model"] == "<bytes>"
    got.pop("model"), want.pop("model")
    assert got == want
    assert ridge.analyze(bytearray(data), dims={"batch": 32})["totals"] == want["totals"]


def test_plan_is_the_cli_json():
    got = ridge.plan(WIDE, devices=8, global_batch=8192, show=3)
    want = cli("plan", WIDE, "--devices", "8", "--global-batch", "8192", "--show", "3")
    for key in want:
        if key not in ("search_seconds",):
            assert got[key] == want[key], key


def test_devices():
    names = [d["name"] for d in ridge.devices()]
    assert "H100-SXM5-80GB" in names and "A100-SXM4-80GB" in names
    h100 = next(d for d in ridge.devices() if d["name"] == "H100-SXM5-80GB")
    assert h100["memory_capacity"] == 80e9 and h100["peak_flops"]["bf16"] > 0


def test_freeze_is_the_cli_flag():
    got = ridge.analyze(MLP, dims={"batch": 32}, freeze=["w1", "b*"])
    assert got == cli("analyze", MLP, "--dim", "batch=32", "--freeze", "w1", "--freeze", "b*")
    assert got["params_frozen"] > 0 and got["memory"]["frozen_weights"] > 0
    with pytest.raises(ridge.Error, match="--freeze 'zz' matches no trainable parameter"):
        ridge.analyze(MLP, dims={"batch": 32}, freeze=["zz"])
    with pytest.raises(ridge.Error, match="wrong type"):
        ridge.analyze(MLP, dims={"batch": 32}, freeze="w1")


def test_errors_carry_the_cli_message():
    missing = os.path.join(SRC, "no-such-model.onnx")
    with pytest.raises(ridge.Error, match="no-such-model.onnx"):
        ridge.analyze(missing)
    with pytest.raises(ridge.Error, match="not an ONNX model|not a valid ONNX protobuf|empty"):
        ridge.analyze(b"")
    with pytest.raises(ridge.Error, match="unknown option 'btach'"):
        ridge.analyze(MLP, btach=3)
    with pytest.raises(ridge.Error, match="dtype='int8': expected a floating-point type"):
        ridge.analyze(MLP, dtype="int8")
    with pytest.raises(ridge.Error, match="unknown device 'Nope'"):
        ridge.analyze(MLP, device="Nope")
    with pytest.raises(ridge.Error, match="wrong type"):
        ridge.analyze(MLP, dims=3)


def test_torch_helper():
    torch = pytest.importorskip("torch", reason="python3-torch is not installed")
    import ridge.torch as rt

    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    got = rt.analyze(model, torch.zeros(8, 16))
    # Two products: 2 * 8 * (16*32 + 32*4) = 10240 FLOPs, + biases 8*(32+4) = 288, + ReLU 256.
    assert got["totals"]["fwd"]["macs"] == 8 * (16 * 32 + 32 * 4)
    assert got["params"] == 16 * 32 + 32 + 32 * 4 + 4


@pytest.fixture(scope="module")
def llm(tmp_path_factory):
    """A 2-layer Llama-style decoder with a KV cache (bench/gen_llm.py)."""
    path = str(tmp_path_factory.mktemp("llm") / "llm.onnx")
    subprocess.run(["/usr/bin/python3", os.path.join(SRC, "bench", "gen_llm.py"), "--layers", "2",
                    "--hidden", "64", "--heads", "4", "--kv-heads", "2", "--ffn", "128",
                    "--vocab", "100", "--out", path], check=True, stdout=subprocess.DEVNULL)
    return path


def test_prefill_and_decode_are_the_cli_json(llm):
    got = ridge.analyze(llm, prompt=16, context=64, batch=2)
    assert got == cli("analyze", llm, "--prompt", "16", "--context", "64", "--batch", "2")
    assert ridge.analyze(llm, context=64, sweep=False) == cli("analyze", llm, "--context", "64",
                                                              "--no-sweep")


def test_plan_inference_is_the_cli_json(llm):
    got = ridge.plan(llm, inference=True, devices=4, context=64, objective="throughput", show=3)
    want = cli("plan", llm, "--inference", "--devices", "4", "--context", "64",
               "--objective", "throughput", "--show", "3")
    assert got == want
    with pytest.raises(ridge.Error, match="global_batch= is training's"):
        ridge.plan(llm, inference=True, devices=2, context=64, global_batch=8)
    with pytest.raises(ridge.Error, match="report= has no page for inference=True yet"):
        ridge.plan(llm, inference=True, devices=2, context=64, report="p.html")


def test_files_beside_the_result(tmp_path):
    page, annotated = str(tmp_path / "r.html"), str(tmp_path / "a.onnx")
    got = ridge.analyze(MLP, dims={"batch": 32}, report=page, annotate=annotated)
    assert got == cli("analyze", MLP, "--dim", "batch=32")
    html = open(page, encoding="utf-8").read()
    assert html.count("<tr") == 3 + 2 + 5 + 3  # nodes, op types, memory parts, header rows
    import onnx
    m = onnx.load(annotated)
    props = {e.key: e.value for e in m.metadata_props}
    assert float(props["ridge.step_flops"]) == got["totals"]["step_flops"]
    plan_page = str(tmp_path / "p.html")
    ridge.plan(WIDE, devices=8, global_batch=8192, show=3, report=plan_page)
    assert 'id="scaling-table"' in open(plan_page, encoding="utf-8").read()
    with pytest.raises(ridge.Error, match="expected an .html file"):
        ridge.analyze(MLP, dims={"batch": 32}, report=str(tmp_path / "r.png"))
    with pytest.raises(ridge.Error, match="pass its path, not its bytes"):
        ridge.analyze(open(MLP, "rb").read(), annotate=annotated)
    with pytest.raises(ridge.Error, match="would overwrite its input"):
        ridge.analyze(annotated, dims={"batch": 32}, annotate=annotated)


def test_memory_reserve_is_the_cli_json():
    got = ridge.plan(WIDE, devices=8, global_batch=8192, tp=2, pp=1, dp=4,
                     memory_reserve=2e9, collective_buffers=1e9, fragmentation=0.1)
    want = cli("plan", WIDE, "--devices", "8", "--global-batch", "8192", "--tp", "2", "--pp",
               "1", "--dp", "4", "--memory-reserve", "2e9", "--collective-buffers", "1e9",
               "--fragmentation", "0.1")
    assert got["fixed"] == want["fixed"] and got["memory_reserve"] == want["memory_reserve"]
    with pytest.raises(ridge.Error, match="leaves nothing of H100-SXM5-80GB"):
        ridge.analyze(MLP, memory_reserve=90e9)
    with pytest.raises(ridge.Error, match=r"fragmentation must be in \[0, 1\)"):
        ridge.analyze(MLP, fragmentation=2.0)
