"""Starts this Python process with glibc's allocator in the state torchprobe-bench sets for itself.

torchprobe-bench fixes glibc's mmap threshold at 32 MiB and its trim threshold at 64 MiB
(src/torchprobe/measure.h, steady_state_allocator): the state a long-running training process
reaches by itself. A side-by-side check must run the Python side in the same state, or every tensor
above glibc's default threshold is a fresh mmap there, page-faulted on each call, and the comparison
measures the allocator instead of the framework. glibc reads these settings only at start-up, so
the first import re-executes the script with them set. Import this before torch.
"""
import os
import sys

SETTINGS = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(64 << 20)}

if any(os.environ.get(k) != v for k, v in SETTINGS.items()):
    os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, **SETTINGS})
