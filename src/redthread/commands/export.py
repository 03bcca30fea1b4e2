"""`redthread export --checkpoint RUN --out FOLDER`: a Transformer run as a Hugging Face GPT-2 folder."""

from __future__ import annotations

from redthread.errors import RedthreadError
from redthread.interop.huggingface import export_gpt2
from redthread.models.transformer import TransformerLM
from redthread.train.checkpoint import read_checkpoint


def export_command(checkpoint: str, out: str, overwrite: bool) -> None:
    ckpt = read_checkpoint(checkpoint)
    if not isinstance(ckpt.model, TransformerLM):
        raise RedthreadError(f"{checkpoint} holds a {ckpt.model_class}: only a TransformerLM exports to GPT-2")
    folder = export_gpt2(ckpt.model, out, tokenizer=ckpt.tokenizer, overwrite=overwrite)
    print(f"GPT-2 folder: {folder} (load it with transformers.GPT2LMHeadModel.from_pretrained)")
