"""ridge: training and inference cost, roofline and parallelism analysis of ONNX models.

    import ridge
    r = ridge.analyze("model.onnx", dims={"batch": 8}, device="A100-SXM4-80GB")
    r["time"]["step_seconds"], r["memory"]["total"]
    p = ridge.plan("gpt.onnx", devices=64, global_batch=512)
    ridge.devices()

analyze() and plan() return what `ridge analyze|plan MODEL --format json` prints
(README "JSON output"), as dicts and lists; a model is a path or its bytes; a
bad model or option raises ridge.Error with the CLI's message.
ridge.torch.analyze(module, example_inputs, **options) exports a torch module
with torch.onnx in memory and analyzes it.
"""
from ._ridge import Error, __version__, analyze, devices, plan

__all__ = ["Error", "analyze", "devices", "plan", "__version__"]
