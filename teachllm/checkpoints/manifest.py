"""What teachllm made in its cache folder, written down in a manifest, and the only files it ever deletes.

A converted folder carries `teachllm-manifest.json`, written last: every file's size and SHA-256. What
teachllm may delete is decided by that manifest alone:
  - it deletes only inside the cache folder, only folders that hold a manifest, and only the files a
    manifest lists (a file of the user's next to them stays, and so does its folder);
  - every name in a manifest is a plain file name in its folder (no `/`, no `..`, not a link), checked
    before any file it names is looked at;
  - a manifest that fails those rules, or is not what `write_manifest` writes, lists nothing: its folder
    counts as damaged (convert.py converts it again) and none of its files is deleted but the manifest;
  - a folder without a manifest is not teachllm's, and is never deleted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

MANIFEST = "teachllm-manifest.json"  # {"version": 1, "source": file name, "files": {name: {"size", "sha256"}}}


class DamagedCheckpointError(ValueError):
    """A checkpoint file that cannot be read as what it should be; the message names the file and the fix."""


class CacheNotWritableError(PermissionError):
    """The cache folder for converted checkpoints cannot be written ($TEACHLLM_CACHE)."""


class ManifestError(ValueError):
    """A manifest that is not what `write_manifest` writes: the folder counts as damaged."""


# ---- the manifest --------------------------------------------------------------------------------
def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            digest.update(chunk)
    return digest.hexdigest()


def write_manifest(folder: Path, source: Path | None = None) -> None:
    """Write folder/MANIFEST: the size and SHA-256 of every file in it, and the name of the GGUF it came from."""
    files = {p.name: {"size": p.stat().st_size, "sha256": sha256_of(p)}
             for p in sorted(folder.iterdir()) if p.is_file() and p.name != MANIFEST}
    manifest = {"version": 1, "source": source.name if source else None, "files": files}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1))


def read_manifest(folder: Path) -> dict | None:
    """The folder's manifest, checked against the schema: None if there is none; ManifestError if it
    cannot be read, is not the schema, or names a file outside the folder."""
    path = folder / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ManifestError(f"{path} cannot be read ({error})") from None
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or manifest.get("version") != 1:
        raise ManifestError(f"{path} is not a teachllm manifest (version 1 with a 'files' object)")
    for name, entry in files.items():  # plain names of plain files: nothing a manifest names can lead outside
        if not name or any(c in name for c in "/\\\0") or name in (".", "..", MANIFEST):
            raise ManifestError(f"{path} lists {name!r}, which is not a plain file name")
        if (folder / name).is_symlink():
            raise ManifestError(f"{path} lists {name!r}, which is a link (teachllm writes none)")
        if (not isinstance(entry, dict) or type(entry.get("size")) is not int or entry["size"] < 0
                or not isinstance(entry.get("sha256"), str) or not re.fullmatch(r"[0-9a-f]{64}", entry["sha256"])):
            raise ManifestError(f"{path}: the entry for {name!r} is not {{'size': int, 'sha256': 64 hex digits}}")
    return manifest


# ---- deleting only what is listed ---------------------------------------------------------------------
def notice(message: str) -> None:
    print(f"teachllm: {message}", file=sys.stderr, flush=True)


def _ours(folder: Path, cache: Path) -> bool:
    """A real folder (not a link) directly inside the cache folder: the only kind teachllm deletes from."""
    return not folder.is_symlink() and folder.is_dir() and folder.parent.resolve() == cache.resolve()


def _remove_listed(folder: Path) -> list[str]:
    """Delete the files the folder's manifest lists, then the manifest, then the folder if nothing is left.
    Returns the names of what stays (files teachllm did not write). A damaged manifest lists nothing, so
    only the manifest itself goes."""
    try:
        listed = list((read_manifest(folder) or {}).get("files", {}))
    except ManifestError:
        listed = []
    for name in [*listed, MANIFEST]:
        path = folder / name
        if path.is_file() or path.is_symlink():  # a link is removed, never what it points to
            path.unlink()
    left = sorted(p.name for p in folder.iterdir())
    if not left:
        folder.rmdir()
    return left


def discard(folder: Path, cache: Path) -> None:
    """Move a damaged converted folder out of the way (one rename, so other processes see it gone at once),
    then delete what its manifest lists. Refuses anything but a real folder inside the cache folder `cache`."""
    if not _ours(folder, cache):
        raise DamagedCheckpointError(f"teachllm deletes only inside its cache folder {cache}; it will not "
                                     f"touch {folder}")
    aside = folder.with_name(f"{folder.name}.damaged-{os.getpid()}-{time.time_ns()}")
    try:
        folder.rename(aside)
    except FileNotFoundError:  # another process moved it first
        return
    except OSError as error:
        raise CacheNotWritableError(f"teachllm cannot replace the damaged {folder} ({error}); delete it, or set "
                                    "TEACHLLM_CACHE to a writable folder") from None
    left = _remove_listed(aside)
    if left:
        notice(f"kept {aside}: it holds files teachllm did not write ({', '.join(left)})")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, belongs to someone else
        return True
    return True


def remove_stale_temporaries(out: Path) -> list[Path]:
    """Delete what interrupted conversions into `out` left behind: work folders whose process is gone, and
    the listed files of damaged folders set aside (and of any other `out.*` folder with a manifest). Links,
    folders without a manifest that no conversion of this teachllm made, and files teachllm did not write
    are left. Returns the folders removed."""
    removed = []
    for path in sorted(out.parent.glob(f"{out.name}.*")):
        if path.is_symlink() or not path.is_dir():
            continue
        work = re.fullmatch(r"tmp-(\d+)-\w+", path.name[len(out.name) + 1:])
        if work and not _pid_alive(int(work[1])) and not (path / MANIFEST).exists():
            shutil.rmtree(path)  # a conversion cut short: mkdtemp made the folder (mode 0700), only it wrote there
            gone = not path.exists()
        elif (path / MANIFEST).is_file() and not (work and _pid_alive(int(work[1]))):
            gone = not _remove_listed(path)
        else:
            continue
        if gone:
            removed.append(path)
    return removed


def remove_converted(cache: Path) -> list[Path]:
    """Delete every converted checkpoint in the cache folder `cache`, file by listed file (`make clean-cache`)."""
    removed = []
    for manifest in sorted(cache.glob(f"*/{MANIFEST}")) if cache.is_dir() else []:
        folder = manifest.parent
        if _ours(folder, cache) and not _remove_listed(folder):
            removed.append(folder)
    return removed
