#!/usr/bin/python3
"""ridge's LLM inference predictions against published measured latency.

Measured: NVIDIA NeMo Framework performance page, "Llama-2 Results, Inference
Performance", Configuration 1 (chatbot: input 128 tokens, output 20 tokens),
Llama-2-7B at TP = 1, PP = 1 on one GPU, average latency in ms
(https://docs.nvidia.com/nemo-framework/user-guide/latest/performance/llama.html;
TensorRT-LLM engines, fp16).

Predicted: bench/gen_llm.py writes a Llama-2-7B-shaped decoder (32 layers,
hidden 4096, 32 heads, ffn 11008, vocab 32000, fp16, KV cache); ridge analyzes
the prefill of 128 tokens and one decode step at context 138 (the mean of the
19 decode steps after the first token, at contexts 129 to 147; a step's time is
linear in its context). Latency = time to first token + 19 x time per output
token, once for the graph as exported (every element-wise op its own kernel)
and once with ridge's fusion what-if (element-wise ops and norms fused into
their producers, as TensorRT-LLM's engines do), and that again with the KV
cache appended in place (--kv-append in-place: TensorRT-LLM's paged cache
writes each step's keys and values into their slots instead of copying the
cache, as the graph's Concat does).

  validate/inference_validate.py --ridge build/bin/ridge
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# (device file, batch) -> measured average latency, ms (the NeMo page's table).
MEASURED = {
    ("A100-SXM4-80GB", 1): 234.0, ("A100-SXM4-80GB", 2): 249.6,
    ("A100-SXM4-80GB", 4): 272.6, ("A100-SXM4-80GB", 8): 329.5,
    ("H100-SXM5-80GB", 1): 153.8, ("H100-SXM5-80GB", 2): 160.8,
    ("H100-SXM5-80GB", 4): 174.8, ("H100-SXM5-80GB", 8): 199.2,
}
PROMPT, OUTPUT = 128, 20
# The mean context of the decode steps: PROMPT + 1 .. PROMPT + OUTPUT - 1.
CONTEXT = PROMPT + OUTPUT // 2


def analyze(ridge, model, device, batch, extra=()):
    out = subprocess.run([ridge, "analyze", model, "--prompt", str(PROMPT), "--context",
                          str(CONTEXT),
                          "--batch", str(batch), "--no-sweep", "--device", device,
                          "--format", "json", *extra], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)["inference"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ridge", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "llama-2-7b.onnx")
        subprocess.run([sys.executable, os.path.join(HERE, "..", "bench", "gen_llm.py"),
                        "--layers", "32", "--hidden", "4096", "--heads", "32", "--kv-heads",
                        "32", "--ffn", "11008", "--vocab", "32000", "--out", model],
                       check=True, capture_output=True)
        print("| GPU | batch | measured ms | ridge ms (as exported) | ratio | ridge ms (fused) "
              "| ratio | ridge ms (fused, cache in place) | ratio |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        ratios, engine = [], []
        for (device, batch), ms in sorted(MEASURED.items()):
            inf = analyze(args.ridge, model, device, batch)
            p, d = inf["prefill"], inf["decode"]
            plain = (p["seconds"] + (OUTPUT - 1) * d["seconds_per_token"]) * 1e3
            fused = (p["fused_seconds"] + (OUTPUT - 1) * d["fused_seconds"]) * 1e3
            inp = analyze(args.ridge, model, device, batch, ["--kv-append", "in-place"])
            p2, d2 = inp["prefill"], inp["decode"]
            placed = (p2["fused_seconds"] + (OUTPUT - 1) * d2["fused_seconds"]) * 1e3
            ratios.append(fused / ms)
            engine.append(placed / ms)
            print("| %s | %d | %.1f | %.1f | %.2f | %.1f | %.2f | %.1f | %.2f |"
                  % (device, batch, ms, plain, plain / ms, fused, fused / ms, placed,
                     placed / ms))
        print("\nfused / measured: mean %.2f, from %.2f to %.2f"
              % (sum(ratios) / len(ratios), min(ratios), max(ratios)))
        print("fused, cache in place / measured: mean %.2f, from %.2f to %.2f"
              % (sum(engine) / len(engine), min(engine), max(engine)))


if __name__ == "__main__":
    main()
