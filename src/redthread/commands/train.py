"""`redthread train` for a Transformer language model (the default task): train it into a run folder,
write run.toml beside it, print the held-out score and where the run is. (`--task vit-digits` and
`--task caption-*` are commands/images.py's and commands/captions.py's; cli.py dispatches.)

Under torchrun every process runs this; rank 0 alone reports and writes run.toml.
"""

from __future__ import annotations

from dataclasses import asdict

from redthread.files import write_toml
from redthread.train.distributed import is_main


def train_command(args, model_fields: dict, train_fields: dict, progress) -> None:
    from redthread.train.language_model import train_language_model

    run = train_language_model(args.out, args.data, args.tokenizer, args.vocab_size, model_fields, train_fields,
                               resume=args.resume, overwrite=args.overwrite, progress=progress, log=print)
    if not is_main():
        return
    model = {k: v for k, v in run.model.cfg.to_dict().items() if k not in ("vocab_size", "src_vocab_size")}
    write_toml(run.run_dir / "run.toml", {"data": args.data, "tokenizer": args.tokenizer, "vocab_size": args.vocab_size,
                                          "model": model, "training": asdict(run.train_cfg)},
               header="the settings of this run: redthread train --config run.toml --out NEW_FOLDER repeats it")
    f = run.final
    print(f"validation (every token once): {f['nll']:.4f} nats/token, perplexity {f['ppl']:.2f}, {f['bpc']:.4f} bits/char "
          f"(scored in {f['seconds']:.1f} s, after the {run.result.elapsed:.1f} s of training)")
    print(f"run folder: {run.run_dir} (its settings: run.toml)")
