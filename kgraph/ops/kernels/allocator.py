"""Keep freed multi-megabyte arrays in the C heap, so a training step does not page-fault them back in.

glibc's malloc hands every block above its mmap threshold (128 KiB at start)
straight back to the operating system when it is freed; an engine that
allocates the same multi-megabyte activations every step then pays a page
fault per 4 KiB page, every step (a third of a small CNN's step time). glibc
raises that threshold by itself to the size of a freed mmap block, up to 32
MiB. Freeing one untouched block just under that ceiling moves it there at
once: later blocks up to that size are recycled from the heap. With another
allocator this is only one short-lived, never-touched allocation.
"""
import numpy as np

# Just under glibc's 32 MiB ceiling for the self-adjusting threshold (the block's header counts too).
_BLOCK_BYTES = (32 << 20) - (64 << 10)


def recycle_large_blocks():
    """Allocate and free one untouched block just under 32 MiB (see the module docstring)."""
    block = np.empty(_BLOCK_BYTES, dtype=np.uint8)
    del block
