"""teachllm's C kernels (teachllm/csrc), built on this machine the first time they are needed.

PyTorch's own 4-bit kernel is written for AVX-512; on a CPU with AVX2 only (most laptops) it runs at about
half its speed. gemv_avx2.c multiplies the GGUF blocks by the activations with AVX2 integer dot products, the
way llama.cpp does (teachllm.fastpath.kernels calls it the "avx2" kernel); gemv_avx512.c is the same arithmetic with
512-bit vectors, two outputs per vector (the "avx512" kernel). Each is compiled with the C compiler already on
the machine ($CC, else `cc`), once, into the cache folder, and loaded with ctypes: no build step at install,
and nothing runs when there is no compiler or the CPU lacks the instructions: then `library()` raises, and the
chooser leaves the kernel out, saying why. With OpenMP (gcc's -fopenmp) the tile rows of a large matrix are
shared among torch.get_num_threads() threads; PyTorch's CPU build loads the same libgomp, so the two share one
thread pool.

The compiled file sits in the cache's `kernels` folder, listed with its SHA-256 in that folder's manifest
(checkpoints/manifest.py). The manifest lists only the files teachllm wrote there (`record`), never the folder's
other files, and a library is loaded only when the manifest lists it, as teachllm's, with that digest: a file
teachllm did not write, or one swapped for another, is never run (it is built again), and `make clean-cache`
removes teachllm's files and leaves any other.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path


@dataclass(frozen=True)
class CFile:
    source: Path
    flags: tuple[str, ...]  # the compiler's flags for its instructions
    needs: frozenset[str]  # the CPU flags (as /proc/cpuinfo spells them) those instructions need
    names: str  # the same, as a reader knows them
    level: int  # its rank among the instruction sets ATEN_CPU_CAPABILITY may name (below: LEVELS)


CSRC = Path(__file__).parent / "csrc"
C_FILES = {
    "avx2": CFile(CSRC / "gemv_avx2.c", ("-mavx2", "-mfma", "-mf16c"), frozenset({"avx2", "fma", "f16c"}),
                  "AVX2, FMA and F16C", 1),
    "avx512": CFile(CSRC / "gemv_avx512.c",
                    ("-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx512vnni", "-mfma", "-mf16c"),
                    frozenset({"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni", "fma", "f16c"}),
                    "AVX-512 (F, BW, VL, DQ) with VNNI", 2),
}
SOURCE = C_FILES["avx2"].source  # the one chapter 10 reads
HEADERS = [CSRC / "gemv_common.h", CSRC / "attention.h"]  # what both include
# ATEN_CPU_CAPABILITY=avx2 keeps PyTorch to its AVX2 kernels (what `make test-avx2` uses to stand in for a
# laptop); teachllm's kernels keep to the same limit
LEVELS = {"default": 0, "avx2": 1, "avx512": 2}
FLAGS = ["-O3", "-shared", "-fPIC"]
THREADED = ["-fopenmp"]  # the tile rows shared among threads; a compiler without OpenMP builds it single-threaded
# the names of the files teachllm writes into the cache's kernels folder: `build`'s libraries and
# kernels.save_choice's saved choices; a manifest entry by any other name is dropped when the manifest is written
OUR_NAMES = re.compile(r"gemv_avx(2|512)-[0-9a-f]{16}\.so|[0-9a-f]{20}\.json")
MADE_BY = "teachllm"  # marks a manifest entry `record` wrote, for a file teachllm had just written itself


def cpu_flags() -> set[str]:
    """The CPU's instruction-set flags as Linux reports them ("flags" on x86, "Features" on ARM); empty where they
    cannot be read."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return set()
    line = next((line for line in text.splitlines() if line.startswith(("flags", "Features"))), "")
    return set(line.partition(":")[2].split())


def why_not(name: str = "avx2") -> str | None:
    """Why the C kernel `name` cannot run here, or None when it can be built."""
    reason = why_not_on_this_cpu(name)
    if reason is None and not compiler():
        reason = "no C compiler found ($CC or cc)"
    return reason


def why_not_on_this_cpu(name: str) -> str | None:
    """Why this CPU (or the instruction-set limit this process runs under) cannot run the C kernel `name`, or
    None. A missing compiler is not the CPU's doing, so it is not a reason here."""
    wanted = C_FILES[name]
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return f"needs an x86-64 CPU with {wanted.names} (this one is {platform.machine()})"
    if not wanted.needs <= cpu_flags():
        return f"needs {wanted.names} (not in this CPU's flags, or its flags could not be read)"
    limit = os.environ.get("ATEN_CPU_CAPABILITY", "").lower()
    if LEVELS.get(limit, 2) < wanted.level:
        return f"ATEN_CPU_CAPABILITY={limit} keeps this process below {wanted.names}"
    return None


def digest() -> str:
    """What the C files say, in 12 hex digits: a saved choice of kernels measured on other C code is stale."""
    texts = [*(h.read_bytes() for h in HEADERS), *(c.source.read_bytes() for c in C_FILES.values())]
    return hashlib.sha256(b"".join(texts)).hexdigest()[:12]


def compiler() -> str | None:
    return shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")


@cache
def library(name: str = "avx2") -> ctypes.CDLL:
    """The compiled kernel `name`, built into the cache folder on first use (about a second); RuntimeError if it
    cannot be built or loaded here."""
    from ..checkpoints.convert import cache_dir

    reason = why_not(name)
    if reason:
        raise RuntimeError(reason)
    try:
        lib = ctypes.CDLL(str(build(compiler(), cache_dir() / "kernels", name)))
    except OSError as failure:  # an unwritable cache, a compiler that cannot be started, a file dlopen refuses
        raise RuntimeError(f"cannot build or load the C kernel: {failure}") from None
    lib.gemv.restype = None
    lib.gemv.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                         ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_float]
    lib.decode_attention.restype = None
    lib.decode_attention.argtypes = [*[ctypes.c_void_p] * 5, ctypes.c_long, *[ctypes.c_int] * 4, ctypes.c_float,
                                     ctypes.c_void_p, ctypes.c_void_p]
    return lib


def refuse_link(folder: Path) -> None:
    """RuntimeError if `folder` is a link: teachllm reads and writes its kernels only in a folder of its own."""
    if folder.is_symlink():
        raise RuntimeError(f"{folder} is a link; teachllm writes only into folders of its own (remove the link, or "
                           "set TEACHLLM_CACHE to another folder)")


def listed(folder: Path) -> dict[str, dict]:
    """The files `folder`'s manifest lists as teachllm's (name → {"size", "sha256", ...}); {} if none, or if the
    manifest is damaged (it vouches for nothing)."""
    from ..checkpoints.manifest import ManifestError, read_manifest

    try:
        files = (read_manifest(folder) or {}).get("files", {}) if folder.is_dir() else {}
    except ManifestError:
        return {}
    return {name: entry for name, entry in files.items() if OUR_NAMES.fullmatch(name)}


def vouched(path: Path) -> bool:
    """Whether `path` is a plain file that its folder's manifest lists as written by teachllm, with its digest."""
    from ..checkpoints.manifest import sha256_of

    entry = listed(path.parent).get(path.name, {})
    return (path.is_file() and not path.is_symlink() and entry.get("made_by") == MADE_BY
            and entry.get("sha256") == sha256_of(path))


def record(written: Path, sha256: str) -> None:
    """List `written`, a file teachllm has just written, in its folder's manifest with its size and `sha256`
    (hashed before it took its name), beside the files of teachllm's it listed before (those still there). The
    folder's other files are never listed: a manifest that vouched for them would get them run, and deleted by
    `make clean-cache`."""
    from ..checkpoints.manifest import MANIFEST

    folder = written.parent
    files = {name: entry for name, entry in listed(folder).items() if (folder / name).is_file()}
    files[written.name] = {"size": written.stat().st_size, "sha256": sha256, "made_by": MADE_BY}
    manifest = {"version": 1, "source": None, "files": dict(sorted(files.items()))}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1))


def build(cc: str, folder: Path, name: str = "avx2") -> Path:
    """The compiled file in `folder`: the one already there if the folder's manifest vouches for it (`vouched`),
    else built now (to a temporary name, then renamed, so that a process using the old file keeps it)."""
    from ..checkpoints.manifest import sha256_of

    refuse_link(folder)
    c_file = C_FILES[name]
    flags = [*FLAGS, *c_file.flags]
    version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.splitlines()[:1]
    text = b"".join(h.read_bytes() for h in HEADERS) + c_file.source.read_bytes()
    key = hashlib.sha256(text + repr((version, flags, THREADED)).encode()).hexdigest()[:16]
    path = folder / f"{c_file.source.stem}-{key}.so"
    if vouched(path):
        return path
    folder.mkdir(parents=True, exist_ok=True)
    temporary = folder / f"{path.name}.{os.getpid()}.tmp"
    for options in (flags + THREADED, flags):
        done = subprocess.run([cc, *options, "-o", str(temporary), str(c_file.source), "-lm"], capture_output=True,
                              text=True)
        if done.returncode == 0:
            break
    if done.returncode != 0:
        temporary.unlink(missing_ok=True)
        raise RuntimeError(f"{Path(cc).name} could not build {c_file.source.name}: {done.stderr.strip()[:300]}")
    digest = sha256_of(temporary)
    temporary.replace(path)
    record(path, digest)
    return path
