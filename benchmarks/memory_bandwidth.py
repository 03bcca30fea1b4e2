"""Memory bandwidth of this machine, GB/s: a copy and a read pass over a buffer far larger than the caches.

The buffer is float32, 256 MiB by default (8x the 32 MiB L3 of the machine these figures were
taken on), so every pass streams from main memory. Two figures, on 1 and 2 torch threads:
- copy: `dst.copy_(src)`, counting the bytes read plus the bytes written (2 x the buffer), as
  STREAM's "copy" does. Writing also costs the cache a read of each destination line first
  (write-allocate), which this count leaves out, so copy reads lower than the bus is busy;
- read: `src.sum()`, the buffer read once, nothing written back but one number.

The read figure is the one that bounds decoding (benchmarks/decode_limit.py): a batch-1 decoding
step reads every weight matrix once (and the KV cache) and writes almost nothing, so the fastest
a step can go is its bytes read / the read bandwidth. Each figure is the median over repeats of
bytes / wall time of one pass, after one warm-up pass; min..max beside it. The machine may be
shared: the load average is printed with the figures.

    PYTHONPATH=src .venv/bin/python benchmarks/memory_bandwidth.py [--quick] [--mib N] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import torch
from common import environment, median, write_json

MIB = 2**20


def rates(work: Callable[[], object], nbytes: int, repeats: int) -> list[float]:
    """Bytes/s of `repeats` timed calls of `work`, after one untimed warm-up call."""
    work()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        work()
        out.append(nbytes / (time.perf_counter() - t0))
    return out


def read_rates(src: torch.Tensor, repeats: int) -> list[float]:
    """Bytes/s of `src.sum()`: every byte of src read once."""
    return rates(src.sum, src.numel() * src.element_size(), repeats)


def copy_rates(src: torch.Tensor, dst: torch.Tensor, repeats: int) -> list[float]:
    """Bytes/s of `dst.copy_(src)`, counting read + written bytes."""
    return rates(lambda: dst.copy_(src), 2 * src.numel() * src.element_size(), repeats)


def buffer(mib: int) -> torch.Tensor:
    """A float32 buffer of `mib` MiB, filled (so its pages are mapped before any timing)."""
    return torch.rand(mib * MIB // 4, generator=torch.Generator().manual_seed(0))


def read_bandwidth(threads: int | None = None, mib: int = 256, repeats: int = 7) -> float:
    """The read bandwidth in bytes/s: the median of `repeats` passes of `sum()` over `mib` MiB of float32.

    The limit of benchmarks/decode_limit.py. `threads`: torch's thread count for the passes
    (the current setting if None; restored afterwards)."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads or before)
    try:
        return median(read_rates(buffer(mib), repeats))
    finally:
        torch.set_num_threads(before)


def gbs(xs: list[float]) -> str:
    return f"{median(xs) / 1e9:6.1f} GB/s  ({min(xs) / 1e9:.1f}..{max(xs) / 1e9:.1f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (smoke test)")
    ap.add_argument("--mib", type=int, default=256, help="buffer size in MiB (default 256: 8x a 32 MiB L3)")
    ap.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    args = ap.parse_args()
    repeats = 3 if args.quick else 11

    src = buffer(args.mib)
    dst = torch.empty_like(src)
    before = torch.get_num_threads()
    figures: dict[int, dict[str, list[float]]] = {}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        figures[threads] = {"copy": copy_rates(src, dst, repeats), "read": read_rates(src, repeats)}
    torch.set_num_threads(before)

    load = os.getloadavg()
    print(f"torch {torch.__version__}; float32 buffer of {args.mib} MiB; {repeats} passes each after a warm-up")
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs\n")
    print(f"  {'threads':>7}   {'copy (read + write), median (min..max)':<38}   {'read (sum), median (min..max)'}")
    for threads, row in figures.items():
        print(f"  {threads:>7}   {gbs(row['copy']):<38}   {gbs(row['read'])}")
    print("\n  the decoding limit uses the read figure (a decode step reads its weights and writes ~nothing)")
    write_json(
        args.json,
        {
            "env": environment(),
            "quick": args.quick,
            "mib": args.mib,
            "repeats": repeats,
            "load_average": load,
            "bytes_per_s": {str(t): row for t, row in figures.items()},
            "median_gb_per_s": {str(t): {k: median(v) / 1e9 for k, v in row.items()} for t, row in figures.items()},
        },
    )


if __name__ == "__main__":
    main()
