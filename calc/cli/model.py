"""``python -m calc model``: a model's shape and parameter counts, or the whole catalog.

>>> from calc.cli import main
>>> main(["model", "--model", "llama-3.1-8b", "--json"])  # doctest: +ELLIPSIS
{
  "active_params": 8030261248,
  "attention": "gqa",
...
0
"""

from __future__ import annotations

import argparse

from calc.catalog import GPUS, MODELS, Model, get_model
from calc.cli.table import format_table
from calc.memory import WEIGHT_FORMATS, kv_bytes_per_token, weight_bytes
from calc.units import format_bytes, format_number, round_sig

HELP = "a model's shape, parameter count (total and active) and bytes per format; no --model lists the catalog"

_SHAPE_FIELDS = ("layers", "hidden_size", "attention_heads", "kv_heads", "head_dim", "intermediate_size",
                 "vocab_size", "tied_embeddings", "attention", "kv_lora_rank", "qk_rope_head_dim", "q_lora_rank",
                 "qk_nope_head_dim", "v_head_dim", "sliding_window", "experts", "experts_per_token",
                 "shared_experts", "moe_intermediate_size", "dense_layers", "qkv_bias")


def add_model_argument(parser: argparse.ArgumentParser, default: str | None = "llama-3.1-70b") -> None:
    """Add ``--model`` (a catalog key or a path to a config.json) to ``parser``.

    >>> p = argparse.ArgumentParser(); add_model_argument(p); p.parse_args([]).model
    'llama-3.1-70b'
    """
    parser.add_argument(
        "--model", default=default, metavar="KEY|PATH",
        help=f"catalog key ({', '.join(sorted(MODELS))}) or path to a Hugging Face config.json"
             + (f" (default {default})" if default else ""))


def model_summary(model: Model) -> dict:
    """The model as JSON-ready data: shape, derived and published counts, bytes per format.

    >>> model_summary(get_model("mixtral-8x7b"))["active_params"]
    12879925248
    """
    out = {"key": model.key, "name": model.name, "source": model.source}
    out.update({field: getattr(model, field) for field in _SHAPE_FIELDS})
    out["total_params"] = model.total_params
    out["active_params"] = model.active_params
    out["published_params"] = model.published_params
    out["published_active_params"] = model.published_active_params
    out["params_vs_published"] = (round_sig(model.total_params / model.published_params - 1, 4)
                                  if model.published_params else None)
    out["kv_bytes_per_token"] = kv_bytes_per_token(model, "bf16")
    out["weights_bytes"] = {fmt: weight_bytes(model, fmt).total_bytes for fmt in WEIGHT_FORMATS}
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``model``.

    >>> p = argparse.ArgumentParser(); add_arguments(p); p.parse_args(["--model", "mistral-7b"]).model
    'mistral-7b'
    """
    add_model_argument(parser, default=None)


def run(args) -> dict:
    """One model's summary, or with no ``--model`` the catalog's models and GPUs.

    >>> sorted(run(argparse.Namespace(model=None)))
    ['gpus', 'models']
    """
    if not getattr(args, "model", None):
        return {
            "models": [{"key": m.key, "name": m.name, "total_params": m.total_params,
                        "active_params": m.active_params, "attention": m.attention} for m in MODELS.values()],
            "gpus": [{"key": g.key, "name": g.name, "memory_bytes_marketed": g.memory_bytes_marketed,
                      "memory_bytes_runtime": g.memory_bytes_runtime, "hbm_bytes_per_s": g.hbm_bytes_per_s,
                      "price_usd_per_hour": g.price_usd_per_hour} for g in GPUS.values()],
        }
    return model_summary(get_model(args.model))


def _params(n: int) -> str:
    return f"{format_number(n)} ({n / 1e9:.2f} B)"


def render(result: dict) -> str:
    """A table of the model (or of the catalog).

    >>> print(render(run(argparse.Namespace(model="llama-3.1-8b"))))  # doctest: +ELLIPSIS
    Llama 3.1 8B (llama-3.1-8b)
    ...
    total parameters          8,030,261,248 (8.03 B)
    ...
    """
    if "models" in result:
        models = format_table(
            [(m["key"], m["name"], f"{m['total_params'] / 1e9:.2f} B", f"{m['active_params'] / 1e9:.2f} B",
              m["attention"]) for m in result["models"]],
            headers=("model", "name", "total", "active", "attention"))
        gpus = format_table(
            [(g["key"], g["name"], format_bytes(g["memory_bytes_marketed"]),
              format_bytes(g["memory_bytes_runtime"], binary=True, digits=4),
              f"{g['hbm_bytes_per_s'] / 1e12:g} TB/s",
              "-" if g["price_usd_per_hour"] is None else f"${g['price_usd_per_hour']:.2f}/h")
             for g in result["gpus"]],
            headers=("gpu", "name", "memory (marketed)", "memory (runtime)", "HBM", "price"))
        return f"{models}\n\n{gpus}\n\nUse --model KEY or --model path/to/config.json for one model."
    rows = [(field.replace("_", " "), result[field]) for field in _SHAPE_FIELDS
            if result[field] not in (0, None, False) or field in ("tied_embeddings", "kv_heads")]
    rows.append(("total parameters", _params(result["total_params"])))
    if result["active_params"] != result["total_params"]:
        rows.append(("active parameters", _params(result["active_params"])))
    if result["published_params"]:
        diff = result["params_vs_published"] * 100
        rows.append(("published", f"{_params(result['published_params'])}, derived {diff:+.2f}%"))
    rows.append(("KV bytes per token (bf16)", f"{format_number(result['kv_bytes_per_token'])} B"))
    for fmt, n_bytes in result["weights_bytes"].items():
        rows.append((f"weights in {fmt}", format_bytes(n_bytes)))
    table = format_table(rows, headers=("quantity", "value"))
    title = result["name"] if f"({result['key']})" in result["name"] else f"{result['name']} ({result['key']})"
    return f"{title}\n{table}\nsource: {result['source']}"
