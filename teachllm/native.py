"""teachllm's one C kernel (teachllm/csrc/gemv_avx2.c), built on this machine the first time it is needed.

PyTorch's own 4-bit kernel is written for AVX-512; on a CPU with AVX2 only (most laptops) it runs at about
half its speed. The C file multiplies the GGUF blocks by the activations with AVX2 integer dot products, the
way llama.cpp does (teachllm.kernels calls it the "avx2" kernel). It is compiled with the C compiler already
on the machine ($CC, else `cc`), once, into the cache folder, and loaded with ctypes: no build step at install,
and nothing runs when there is no compiler or the CPU lacks AVX2 and FMA: then `library()` raises, and the
chooser leaves the kernel out, saying why. With OpenMP (gcc's -fopenmp) the tile rows of a large matrix are
shared among torch.get_num_threads() threads; PyTorch's CPU build loads the same libgomp, so the two share one
thread pool.

The compiled file sits in the cache's `kernels` folder, listed with its SHA-256 in that folder's manifest
(teachllm.manifest): a library is loaded only when the manifest lists it with that digest, so a file teachllm
did not write is never run, and `make clean-cache` removes it with the rest.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
from functools import cache
from pathlib import Path

SOURCE = Path(__file__).parent / "csrc" / "gemv_avx2.c"
FLAGS = ["-O3", "-mavx2", "-mfma", "-shared", "-fPIC"]
THREADED = ["-fopenmp"]  # the tile rows shared among threads; a compiler without OpenMP builds it single-threaded


def cpu_flags() -> set[str]:
    """The CPU's instruction-set flags as Linux reports them ("flags" on x86, "Features" on ARM); empty where they
    cannot be read."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return set()
    line = next((line for line in text.splitlines() if line.startswith(("flags", "Features"))), "")
    return set(line.partition(":")[2].split())


def why_not() -> str | None:
    """Why the C kernel cannot run here, or None when it can be built."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return f"needs an x86-64 CPU with AVX2 (this one is {platform.machine()})"
    if not {"avx2", "fma"} <= cpu_flags():
        return "needs AVX2 and FMA (not in this CPU's flags, or its flags could not be read)"
    if not compiler():
        return "no C compiler found ($CC or cc)"
    return None


def compiler() -> str | None:
    return shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")


@cache
def library() -> ctypes.CDLL:
    """The compiled kernel, built into the cache folder on first use (about a second); RuntimeError if it cannot
    be built or loaded here."""
    from .convert import cache_dir

    reason = why_not()
    if reason:
        raise RuntimeError(reason)
    try:
        lib = ctypes.CDLL(str(build(compiler(), cache_dir() / "kernels")))
    except OSError as failure:  # an unwritable cache, a compiler that cannot be started, a file dlopen refuses
        raise RuntimeError(f"cannot build or load the C kernel: {failure}") from None
    lib.gemv.restype = None
    lib.gemv.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                         ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    return lib


def build(cc: str, folder: Path) -> Path:
    """The compiled file in `folder`: the one already there if the folder's manifest lists it with its digest,
    else built now (to a temporary name, then renamed, so that a process using the old file keeps it)."""
    from .manifest import ManifestError, read_manifest, sha256_of, write_manifest

    if folder.is_symlink():
        raise RuntimeError(f"{folder} is a link; teachllm writes only into folders of its own")
    version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.splitlines()[:1]
    key = hashlib.sha256(SOURCE.read_bytes() + repr((version, FLAGS, THREADED)).encode()).hexdigest()[:16]
    path = folder / f"gemv_avx2-{key}.so"
    try:
        listed = (read_manifest(folder) or {}).get("files", {}) if folder.is_dir() else {}
    except ManifestError:  # a damaged manifest vouches for nothing: build again, and write it anew
        listed = {}
    if path.is_file() and not path.is_symlink() and listed.get(path.name, {}).get("sha256") == sha256_of(path):
        return path
    folder.mkdir(parents=True, exist_ok=True)
    temporary = folder / f"{path.name}.{os.getpid()}.tmp"
    for flags in (FLAGS + THREADED, FLAGS):
        done = subprocess.run([cc, *flags, "-o", str(temporary), str(SOURCE)], capture_output=True, text=True)
        if done.returncode == 0:
            break
    if done.returncode != 0:
        temporary.unlink(missing_ok=True)
        raise RuntimeError(f"{Path(cc).name} could not build {SOURCE.name}: {done.stderr.strip()[:300]}")
    temporary.replace(path)
    write_manifest(folder)
    return path
