"""`save` and `load`: tensors and (nested) containers of tensors and numbers, in a file that
cannot run code when it is loaded.

PyTorch's `torch.save` writes a pickle, and unpickling a file from someone else can run any
code they put in it (that is why `torch.load` defaults to `weights_only=True`). minitorch's
format carries data only, so there is nothing to execute:

    a zip archive (stored, not compressed) holding
      minitorch.json   {"format": "minitorch.save", "version": 1, "byteorder": ..., "root": ...}
      tensors/<n>      the raw bytes of tensor n, C-contiguous

`root` describes the saved object in JSON: numbers, strings, booleans and None as themselves;
containers as one-key objects: {"list": [...]}, {"tuple": [...]}, {"dict": [[key, value], ...]},
{"OrderedDict": [[key, value], ...]}; tensors as {"tensor": n, "dtype": "float32", "shape":
[2, 3], "device": "cpu", "requires_grad": false, "parameter": false}. A tensor that appears
twice in the object is stored once and loads as one tensor (other sharing, such as views of one
storage, is not kept: each is saved as a copy).

`load` reads only this format, checks everything it reads (tags, dtypes, shapes, byte counts)
and reports anything else, for instance a pickle written by `torch.save`, with an
`UnsupportedFileError` that says what the file is and why it was refused.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import sys
import zipfile
from collections import OrderedDict
from typing import IO, Any

import torch

from minitorch.tensor import Tensor

FORMAT = "minitorch.save"
VERSION = 1
MANIFEST = "minitorch.json"

# Every dtype a tensor may be saved with, by the name used in the manifest.
DTYPES = {
    str(dtype).removeprefix("torch."): dtype
    for dtype in (
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
        torch.complex64,
        torch.complex128,
        torch.uint8,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.bool,
    )
}

FileLike = str | os.PathLike | IO[bytes]


class UnsupportedFileError(pickle.UnpicklingError):
    """`load` refused a file: not written by `minitorch.save`, damaged, or crafted.

    A subclass of `pickle.UnpicklingError`, the error `torch.load` raises for files it refuses,
    so code that catches that keeps working.
    """


# -------------------------------------------------------------------------------------------------
# save
# -------------------------------------------------------------------------------------------------
def save(obj: Any, f: FileLike) -> None:
    """Write `obj` (a tensor, or nested dict/OrderedDict/list/tuple of tensors, numbers,
    strings, booleans and None, e.g. a `state_dict()`) to a path or a binary file object."""
    tensors: list[Tensor] = []
    root = _encode(obj, tensors, {})
    manifest = {"format": FORMAT, "version": VERSION, "byteorder": sys.byteorder, "root": root}
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as file:
            _write_archive(file, manifest, tensors)
    else:
        _write_archive(f, manifest, tensors)


def _write_archive(file: IO[bytes], manifest: dict, tensors: list[Tensor]) -> None:
    with zipfile.ZipFile(file, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr(MANIFEST, json.dumps(manifest))
        for n, t in enumerate(tensors):
            archive.writestr(f"tensors/{n}", _tensor_bytes(t._data))


def _tensor_bytes(data: torch.Tensor) -> bytes:
    flat = data.detach().cpu().contiguous().reshape(-1)
    return flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""


def _encode(obj: Any, tensors: list[Tensor], seen: dict[int, dict]) -> Any:
    """The JSON description of `obj`; tensors are appended to `tensors`."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, Tensor):
        if id(obj) not in seen:
            if obj.dtype not in DTYPES.values():
                raise TypeError(f"minitorch.save: tensors of dtype {obj.dtype} are not supported")
            seen[id(obj)] = {
                "tensor": len(tensors),
                "dtype": str(obj.dtype).removeprefix("torch."),
                "shape": list(obj.shape),
                "device": str(obj.device),
                "requires_grad": obj.requires_grad,
                "parameter": type(obj).__name__ == "Parameter",
            }
            tensors.append(obj)
        return seen[id(obj)]
    if isinstance(obj, (dict, OrderedDict)):
        kind = "OrderedDict" if isinstance(obj, OrderedDict) else "dict"
        return {
            kind: [[_encode(k, tensors, seen), _encode(v, tensors, seen)] for k, v in obj.items()]
        }
    if isinstance(obj, (list, tuple)):
        kind = "list" if isinstance(obj, list) else "tuple"
        return {kind: [_encode(item, tensors, seen) for item in obj]}
    raise TypeError(
        f"minitorch.save: cannot save an object of type {type(obj).__name__}; it saves tensors, "
        "numbers, strings, booleans, None, and dicts, lists and tuples of them (for a model, "
        "save model.state_dict())"
    )


# -------------------------------------------------------------------------------------------------
# load
# -------------------------------------------------------------------------------------------------
def load(
    f: FileLike, map_location: Any = None, weights_only: bool | None = None, **kwargs: Any
) -> Any:
    """Read back an object written by `save`, from a path or a binary file object.

    `map_location` (a device, a device string, or a dict such as `{"cuda:0": "cpu"}`) moves
    tensors; by default each goes back to the device it was saved from. `weights_only` is
    accepted for compatibility with `torch.load`: loading is always data-only here.
    """
    name = os.fspath(f) if isinstance(f, (str, os.PathLike)) else "the file"
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as file:
            content = file.read()
    else:
        content = f.read()
    _check_header(content, name)
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            manifest = _read_manifest(archive, name)
            return _Reader(archive, name, map_location).decode(manifest["root"])
    except zipfile.BadZipFile as error:
        raise UnsupportedFileError(
            f"minitorch.load: {name} is a damaged zip archive ({error})"
        ) from None
    except RecursionError:
        raise UnsupportedFileError(f"minitorch.load: {name} is nested too deeply") from None


def _check_header(content: bytes, name: str) -> None:
    if content.startswith(b"PK\x03\x04") or content.startswith(b"PK\x05\x06"):
        return
    if content[:1] == b"\x80" or content[:1] in (b"(", b"c", b"]", b"}"):
        raise UnsupportedFileError(
            f"minitorch.load: {name} is a pickle, not a file written by minitorch.save. "
            "minitorch never unpickles, because loading a pickle can run arbitrary code."
        )
    raise UnsupportedFileError(
        f"minitorch.load: {name} is not a file written by minitorch.save (it is not a zip "
        f"archive; it starts with {content[:8]!r})"
    )


def _read_manifest(archive: zipfile.ZipFile, name: str) -> dict:
    names = archive.namelist()
    if any(info.compress_type != zipfile.ZIP_STORED for info in archive.infolist()):
        # minitorch.save never compresses; refusing compressed entries also means no entry can
        # expand to more memory than the file itself (no "zip bomb").
        raise UnsupportedFileError(
            f"minitorch.load: {name} holds compressed entries, so minitorch.save did not write it"
        )
    if MANIFEST not in names:
        if any(n.endswith("data.pkl") for n in names):
            raise UnsupportedFileError(
                f"minitorch.load: {name} was written by torch.save (a zip holding a pickle, "
                "data.pkl), not by minitorch.save. minitorch never unpickles, because loading a "
                "pickle can run arbitrary code; load it with torch.load(weights_only=True) and "
                "convert the tensors, or save it again with minitorch.save."
            )
        raise UnsupportedFileError(
            f"minitorch.load: {name} is a zip archive without {MANIFEST}, so it was not "
            "written by minitorch.save"
        )
    try:
        manifest = json.loads(archive.read(MANIFEST).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise UnsupportedFileError(
            f"minitorch.load: {name} has a damaged {MANIFEST}: {error}"
        ) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or "root" not in manifest:
        raise UnsupportedFileError(f"minitorch.load: {name} has no minitorch.save manifest")
    if manifest.get("version") != VERSION:
        raise UnsupportedFileError(
            f"minitorch.load: {name} has format version {manifest.get('version')!r}; this "
            f"minitorch reads version {VERSION}"
        )
    if manifest.get("byteorder") != sys.byteorder:
        raise UnsupportedFileError(
            f"minitorch.load: {name} was written on a {manifest.get('byteorder')}-endian machine"
        )
    return manifest


class _Reader:
    """Rebuilds the saved object from the manifest, checking each entry it reads."""

    def __init__(self, archive: zipfile.ZipFile, name: str, map_location: Any) -> None:
        self.archive = archive
        self.name = name
        self.map_location = map_location
        self.loaded: dict[int, Tensor] = {}

    def fail(self, problem: str) -> UnsupportedFileError:
        return UnsupportedFileError(f"minitorch.load: {self.name}: {problem}")

    def decode(self, node: Any) -> Any:
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list) or not isinstance(node, dict) or not node:
            raise self.fail(f"unexpected entry {_short(node)}")
        if "tensor" in node:
            return self.tensor(node)
        if len(node) != 1:
            raise self.fail(f"unexpected entry {_short(node)}")
        ((kind, items),) = node.items()
        if kind not in ("list", "tuple", "dict", "OrderedDict"):
            raise self.fail(f"unknown entry type {kind!r}")
        if not isinstance(items, list):
            raise self.fail(f"a {kind} entry must hold a list, got {_short(items)}")
        if kind == "list":
            return [self.decode(item) for item in items]
        if kind == "tuple":
            return tuple(self.decode(item) for item in items)
        pairs = []
        for pair in items:
            if not isinstance(pair, list) or len(pair) != 2:
                raise self.fail(f"a {kind} item must be a [key, value] pair")
            key = self.decode(pair[0])
            if isinstance(key, (list, dict, Tensor)):
                raise self.fail(f"a {kind} key must be a number, string or tuple")
            pairs.append((key, self.decode(pair[1])))
        return OrderedDict(pairs) if kind == "OrderedDict" else dict(pairs)

    def tensor(self, node: dict) -> Tensor:
        index, dtype_name, shape = node.get("tensor"), node.get("dtype"), node.get("shape")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise self.fail(f"bad tensor number {index!r}")
        if index in self.loaded:
            return self.loaded[index]
        if dtype_name not in DTYPES:
            raise self.fail(f"tensor {index} has unsupported dtype {dtype_name!r}")
        if not isinstance(shape, list) or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape
        ):
            raise self.fail(f"tensor {index} has a bad shape {shape!r}")
        dtype = DTYPES[dtype_name]
        try:
            raw = self.archive.read(f"tensors/{index}")
        except KeyError:
            raise self.fail(f"tensor {index} is missing from the archive") from None
        numel = 1
        for size in shape:
            numel *= size
        expected = numel * torch.empty((), dtype=dtype).element_size()
        if len(raw) != expected:
            raise self.fail(
                f"tensor {index} ({dtype_name}, shape {shape}) should have {expected} bytes, "
                f"found {len(raw)}"
            )
        if numel:
            data = torch.frombuffer(bytearray(raw), dtype=dtype).reshape(shape)
        else:
            data = torch.empty(shape, dtype=dtype)
        data = data.to(self.device_for(str(node.get("device", "cpu"))))
        if node.get("parameter"):
            from minitorch.nn import Parameter

            result = Parameter(Tensor._make(data), requires_grad=bool(node.get("requires_grad")))
        else:
            result = Tensor._make(data)
            if node.get("requires_grad"):
                result.requires_grad_(True)
        self.loaded[index] = result
        return result

    def device_for(self, saved: str) -> torch.device:
        target: Any = saved
        if isinstance(self.map_location, dict):
            target = self.map_location.get(saved, saved)
        elif self.map_location is not None:
            target = self.map_location
        try:
            device = torch.device(target)
        except (RuntimeError, TypeError):
            raise self.fail(f"bad device {target!r}") from None
        if device.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError(
                "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() "
                "is False. If you are running on a CPU-only machine, please use minitorch.load "
                "with map_location='cpu' to map your storages to the CPU."
            )
        return device


def _short(node: Any) -> str:
    text = json.dumps(node)
    return text if len(text) <= 60 else text[:57] + "..."
