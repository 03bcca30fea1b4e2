"""Hugging Face checkpoints in and out of redthread's own modules (explicit key-mapping tables)."""
