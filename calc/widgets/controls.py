"""The controls many pages share, annotated once: model, GPU, tensor parallel, weight and KV precisions.

A page module writes ``model: controls.Model = "llama-3.1-8b"`` instead of restating the catalog's choices
(:mod:`calc.widgets.framework`: a parameter's ``Annotated`` control is what the page renders). A page whose
label or unit differs (the built pages keep their wording) takes the same control from a factory:
``tp: controls.tensor_parallel("GPUs per replica (tensor parallel)", unit="") = 4``.

>>> from calc.widgets.framework import describe, view, widget
>>> @widget
... def probe(model: Model = "llama-3.1-8b", tp: TensorParallel = 2, weights: weight_format("Weights") = "fp8"):
...     return view()
>>> [(c["name"], c["label"], c["kind"]) for c in describe("controls.probe")["controls"]]
[('model', 'Model', 'choice'), ('tp', 'Tensor parallel', 'int'), ('weights', 'Weights', 'choice')]
>>> ["llama-3.1-8b", "Llama 3.1 8B"] in describe("controls.probe")["controls"][0]["options"]
True
>>> from calc.widgets.framework import REGISTRY
>>> del REGISTRY["controls.probe"]
"""

from __future__ import annotations

from typing import Annotated

from calc.catalog import GPUS, MODELS
from calc.memory import KV_DTYPES, WEIGHT_FORMATS
from calc.widgets.framework import Choice, IntRange

__all__ = [
    "MODEL_CHOICES", "GPU_CHOICES", "TP_CHOICES", "model", "gpu", "tensor_parallel", "tp_choice", "weight_format",
    "kv_dtype", "Model", "Gpu", "TensorParallel", "TpChoice", "Weights", "KvDtype",
]

#: Every catalog model and GPU as (key, name), in the catalog's order.
MODEL_CHOICES = tuple((key, entry.name) for key, entry in MODELS.items())
GPU_CHOICES = tuple((key, entry.name) for key, entry in GPUS.items())
#: The tensor-parallel sizes the deep dives offer (a ``<select>``; a power of two divides every model's heads).
TP_CHOICES = ("1", "2", "4", "8")
MAX_TP = 64


def model(label: str = "Model", *, extra: tuple = ()):
    """A model from the catalog (``extra`` appends (value, label) choices, e.g. a model entered by hand)."""
    return Annotated[str, Choice(MODEL_CHOICES + tuple(extra), label=label)]


def gpu(label: str = "GPU"):
    """A GPU from the catalog."""
    return Annotated[str, Choice(GPU_CHOICES, label=label)]


def tensor_parallel(label: str = "Tensor parallel", *, unit: str = "GPUs"):
    """GPUs that share one replica's weights, 1 to 64, typed in."""
    return Annotated[int, IntRange(1, MAX_TP, 1, unit, label=label)]


def tp_choice(label: str = "GPUs (tensor parallel)"):
    """GPUs that share one replica's weights, picked from :data:`TP_CHOICES` (as text)."""
    return Annotated[str, Choice(TP_CHOICES, label=label)]


def weight_format(label: str = "Weight precision"):
    """The weights' storage format (:data:`calc.memory.WEIGHT_FORMATS`)."""
    return Annotated[str, Choice(WEIGHT_FORMATS, label=label)]


def kv_dtype(label: str = "KV cache dtype"):
    """The KV cache's dtype (:data:`calc.memory.KV_DTYPES`)."""
    return Annotated[str, Choice(KV_DTYPES, label=label)]


Model = model()
Gpu = gpu()
TensorParallel = tensor_parallel()
TpChoice = tp_choice()
Weights = weight_format()
KvDtype = kv_dtype()
