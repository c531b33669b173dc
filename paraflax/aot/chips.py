"""Public peak figures of the chips a config is compiled for.

One row per chip kind, each figure with its source. `ici_bytes_per_s` is
the per-chip all-reduce bandwidth: the pod's all-reduce bandwidth over its
chips where the vendor gives it (v4, v5e, v6e; for v5e and v6e it equals
the stated one-way ICI bandwidth), else the stated ICI bandwidth (v5p) or
the NVLink bandwidth (GPUs). HBM sizes are taken in the unit the source
states (GiB for v4, GB for the others): the conservative reading.
"""
from __future__ import annotations

import dataclasses

GB, GIB, TERA = 10**9, 2**30, 10**12


@dataclasses.dataclass(frozen=True)
class Chip:
  name: str
  peak_flops: float  # dense bf16 FLOP/s
  hbm_bytes: int
  hbm_bytes_per_s: float
  ici_bytes_per_s: float
  source: str


CHIPS = {
    "v4": Chip("TPU v4", 275 * TERA, 32 * GIB, 1200 * GB,
               1.1e15 / 4096,
               "cloud.google.com/tpu/docs/v4: 275 TFLOPs (bf16), 32 GiB "
               "HBM2 at 1,200 GBps, all-reduce bandwidth per Pod 1.1 PB/s "
               "over 4,096 chips"),
    "v5e": Chip("TPU v5 lite", 197 * TERA, 16 * GB, 819 * GB,
                51.2e12 / 256,
                "cloud.google.com/tpu/docs/v5e: 197 TFLOPs (bf16), 16 GB "
                "HBM2 at 819 GBps, interchip interconnect 1,600 Gbps "
                "(all-reduce bandwidth per Pod 51.2 TB/s over 256 chips)"),
    "v5p": Chip("TPU v5p", 459 * TERA, 95 * GB, 2765 * GB, 4800e9 / 8,
                "cloud.google.com/tpu/docs/v5p: 459 TFLOPs (bf16), 95 GB "
                "HBM2e at 2,765 GBps, interchip interconnect 4,800 Gbps"),
    "v6e": Chip("TPU v6 lite", 918 * TERA, 32 * GB, 1638 * GB,
                102.4e12 / 256,
                "cloud.google.com/tpu/docs/v6e: 918 TFLOPs (bf16), 32 GB "
                "HBM at 1,638 GBps, all-reduce bandwidth per Pod 102.4 TB/s "
                "over 256 chips (800 GBps bidirectional ICI per chip)"),
    "h100": Chip("NVIDIA H100", 989 * TERA, 80 * GB, 3350 * GB, 450 * GB,
                 "nvidia.com H100 datasheet (SXM): 1,979 TFLOPS bf16 with "
                 "sparsity (989 dense), 80 GB HBM3 at 3.35 TB/s, NVLink "
                 "900 GB/s (450 GB/s each way)"),
    "h200": Chip("NVIDIA H200", 989 * TERA, 141 * GB, 4800 * GB, 450 * GB,
                 "nvidia.com H200 datasheet (SXM): 1,979 TFLOPS bf16 with "
                 "sparsity (989 dense), 141 GB HBM3e at 4.8 TB/s, NVLink "
                 "900 GB/s (450 GB/s each way)"),
}

# jax's device_kind of each chip kind: how a device names itself.
DEVICE_KINDS = {"TPU v4": "v4", "TPU v5 lite": "v5e", "TPU v5e": "v5e",
                "TPU v5": "v5p", "TPU v5p": "v5p", "TPU v6 lite": "v6e",
                "TPU v6e": "v6e", "NVIDIA H100": "h100",
                "NVIDIA H100 80GB HBM3": "h100", "NVIDIA H200": "h200"}


def of_device_kind(kind: str) -> Chip | None:
  """The chip of a jax `device_kind`, or None (a CPU, an unlisted GPU)."""
  if kind in DEVICE_KINDS:
    return CHIPS[DEVICE_KINDS[kind]]
  for known, name in DEVICE_KINDS.items():
    if kind.startswith(known):
      return CHIPS[name]
  return None
