"""ridge.torch.analyze(module, example_inputs, **options): a torch module
exported in memory with the user's own torch.onnx (opset 17), then analyzed as
ridge.analyze(bytes, **options) would. export= passes keywords to
torch.onnx.export (dynamic_axes=..., input_names=...)."""
import io

from . import _ridge


def analyze(module, example_inputs, export=None, **options):
    import torch  # the user's; ridge does not depend on it

    if not isinstance(example_inputs, tuple):
        example_inputs = (example_inputs,)
    kwargs = {"opset_version": 17}
    kwargs.update(export or {})
    buf = io.BytesIO()
    try:
        torch.onnx.export(module, example_inputs, buf, dynamo=False, **kwargs)
    except TypeError:  # a torch without the dynamo switch
        torch.onnx.export(module, example_inputs, buf, **kwargs)
    return _ridge.analyze(buf.getvalue(), **options)
