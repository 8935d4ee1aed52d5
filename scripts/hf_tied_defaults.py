"""Write calc/data/hf_tied_embeddings.json: the model types whose config class ties the embeddings by default.

A ``config.json`` that leaves ``tie_word_embeddings`` out takes its config class's default, which differs by
family: LlamaConfig, Qwen2Config and MistralConfig say False, Gemma2Config, Cohere2Config and Starcoder2Config say
True, and a class without the field reads as False (transformers' modeling_utils: ``getattr(self.config,
"tie_word_embeddings", False)``). This script reads every ``configuration_*.py`` of a transformers wheel and keeps
each class's ``model_type`` whose ``tie_word_embeddings`` default is True. Rerun it on a newer wheel:

    pip download transformers==5.23.0 --no-deps -d /tmp/tf
    python scripts/hf_tied_defaults.py /tmp/tf/transformers-5.23.0-py3-none-any.whl
"""

from __future__ import annotations

import argparse
import json
import re
import zipfile
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "calc" / "data" / "hf_tied_embeddings.json"
_MODEL_TYPE = re.compile(r'^\s+model_type\s*(?::\s*\w+\s*)?=\s*"([^"]+)"', re.M)
_TIED = re.compile(r"^\s+tie_word_embeddings\s*:\s*[^=\n]*=\s*(True|False|None)", re.M)


def tied_by_default(wheel: str) -> list[str]:
    """The sorted model types whose config class declares ``tie_word_embeddings: bool = True``."""
    tied = set()
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if not re.fullmatch(r"transformers/models/[^/]+/configuration_[^/]+\.py", name):
                continue
            source = archive.read(name).decode("utf-8")
            for body in re.split(r"\nclass ", source)[1:]:
                model_type, default = _MODEL_TYPE.search(body), _TIED.search(body)
                if model_type and default and default.group(1) == "True":
                    tied.add(model_type.group(1))
    return sorted(tied)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", help="a transformers wheel (.whl)")
    wheel = parser.parse_args().wheel
    version = re.search(r"transformers-([^-]+)-", Path(wheel).name)
    data = {
        "about": "Model types whose transformers config class ties the input and output embeddings when "
                 "config.json leaves tie_word_embeddings out (every other type: untied); read by "
                 "calc/catalog/hf_config.py, written by scripts/hf_tied_defaults.py from the transformers wheel "
                 "named in 'source'.",
        "source": f"transformers {version.group(1) if version else Path(wheel).name}: each "
                  "models/*/configuration_*.py class's tie_word_embeddings default",
        "model_types": tied_by_default(wheel),
    }
    OUT.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"{len(data['model_types'])} model types tie by default -> {OUT}")


if __name__ == "__main__":
    main()
