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


def test_errors_carry_the_cli_message():
    missing = os.path.join(SRC, "no-such-model.onnx")
    with pytest.raises(ridge.Error, match="no-such-model.onnx"):
        ridge.analyze(missing)
    with pytest.raises(ridge.Error, match="not an ONNX model|not a valid ONNX protobuf|empty"):
        ridge.analyze(b"")
    with pytest.raises(ridge.Error, match="unknown option 'batch'"):
        ridge.analyze(MLP, batch=3)
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
