"""minitorch.save / minitorch.load: exact round trips, and files that must be refused.

Loading never runs code from the file: pickles (including a file written by torch.save, and a
pickle whose __reduce__ calls os.system) and damaged or crafted archives are refused with an
`UnsupportedFileError` that says what is wrong, and the crafted command never runs.
"""

from __future__ import annotations

import io
import json
import math
import os
import pathlib
import pickle
import zipfile
from collections import OrderedDict

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import shapes

import minitorch
from minitorch.serialization import UnsupportedFileError

DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.uint8,
    torch.bool,
    torch.complex64,
]


def round_trip(obj, **load_options):
    buffer = io.BytesIO()
    minitorch.save(obj, buffer)
    buffer.seek(0)
    return minitorch.load(buffer, **load_options)


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal dtype, shape and bytes (so NaNs and -0.0 count as equal to themselves)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    as_bytes = lambda t: t.contiguous().reshape(-1).view(torch.uint8)  # noqa: E731
    return torch.equal(as_bytes(a), as_bytes(b))


@given(dtype=st.sampled_from(DTYPES), shape=shapes(0, 3, 0, 4), seed=st.integers(0, 100))
def test_tensors_round_trip_bit_for_bit(dtype, shape, seed):
    gen = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point or dtype.is_complex:
        values = (torch.randn(shape, generator=gen, dtype=torch.float64) * 1e3).to(dtype)
    else:
        values = torch.randint(0, 2 if dtype == torch.bool else 200, shape, generator=gen)
        values = values.to(dtype)
    loaded = round_trip(minitorch.Tensor(values))
    assert isinstance(loaded, minitorch.Tensor)
    assert same_bits(loaded._data, values)
    assert loaded.is_leaf and not loaded.requires_grad


def test_special_values_and_layouts_round_trip():
    special = torch.tensor([math.nan, math.inf, -math.inf, -0.0, 1e-310], dtype=torch.float64)
    transposed = minitorch.arange(6.0).reshape(2, 3).t()  # not contiguous
    loaded = round_trip([minitorch.Tensor(special), transposed])
    assert same_bits(loaded[0]._data, special)
    assert loaded[1].tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]


def test_containers_and_numbers_keep_their_types():
    obj = {
        "ordered": OrderedDict([("z", 1), ("a", 2)]),
        "list": [1, 2.0, True, None, "naïve ✓"],
        "tuple": (3, (4.5, [])),
        7: "int key",
        (1, "x"): "tuple key",
        "floats": [math.inf, -math.inf, 1e-300],
        "empty": {},
    }
    loaded = round_trip(obj)
    assert loaded == obj
    assert type(loaded["ordered"]) is OrderedDict and list(loaded["ordered"]) == ["z", "a"]
    assert [type(v) for v in loaded["list"]] == [int, float, bool, type(None), str]
    assert isinstance(loaded["tuple"], tuple) and isinstance(loaded["tuple"][1][1], list)
    assert math.isnan(round_trip(math.nan))


def test_requires_grad_and_shared_tensors_survive():
    w = minitorch.randn(3, requires_grad=True)
    loaded = round_trip({"a": w, "b": [w], "c": w.detach() * 2})
    assert loaded["a"].requires_grad and loaded["a"].is_leaf
    assert loaded["b"][0] is loaded["a"], "one tensor saved twice must load as one tensor"
    assert not loaded["c"].requires_grad
    assert torch.equal(loaded["a"]._data, w._data)
    assert loaded["a"]._data.data_ptr() != w._data.data_ptr(), "loading must copy"


def test_parameters_load_as_parameters():
    from minitorch.nn import Parameter

    p = Parameter(minitorch.randn(2, 2))
    frozen = Parameter(minitorch.randn(2), requires_grad=False)
    loaded = round_trip({"p": p, "frozen": frozen})
    assert type(loaded["p"]) is Parameter and loaded["p"].requires_grad
    assert type(loaded["frozen"]) is Parameter and not loaded["frozen"].requires_grad
    assert torch.equal(loaded["p"]._data, p._data)


def test_paths_and_file_objects(tmp_path):
    x = minitorch.tensor([[1.0, 2.0]])
    minitorch.save(x, str(tmp_path / "as_str.pt"))
    minitorch.save(x, tmp_path / "as_path.pt")
    with open(tmp_path / "as_file.pt", "wb") as f:
        minitorch.save(x, f)
    for name in ("as_str.pt", "as_path.pt", "as_file.pt"):
        assert minitorch.load(tmp_path / name).tolist() == [[1.0, 2.0]]
    with open(tmp_path / "as_file.pt", "rb") as f:
        assert minitorch.load(f, weights_only=True).tolist() == [[1.0, 2.0]]


def test_map_location_moves_tensors():
    loaded = round_trip({"x": minitorch.ones(2)}, map_location="cpu")
    assert loaded["x"].device.type == "cpu"
    loaded = round_trip(minitorch.ones(2), map_location={"cpu": "cpu"})
    assert loaded.device.type == "cpu"


def test_unsupported_objects_are_named():
    with pytest.raises(TypeError, match="cannot save an object of type set"):
        minitorch.save({"s": {1, 2}}, io.BytesIO())
    with pytest.raises(TypeError, match="cannot save an object of type function"):
        minitorch.save([lambda: 0], io.BytesIO())
    with pytest.raises(TypeError, match=r"type Linear.*save model.state_dict\(\)"):
        minitorch.save(minitorch.nn.Linear(2, 2), io.BytesIO())


# Files that must be refused ----------------------------------------------------------------------
class RunsACommand:
    """Unpickling this runs a shell command (creates a marker file)."""

    def __init__(self, marker: pathlib.Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_malicious_pickle_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps(RunsACommand(marker)))
    with pytest.raises(UnsupportedFileError, match="is a pickle.*arbitrary code"):
        minitorch.load(path)
    assert not marker.exists()


def test_a_malicious_torch_save_file_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil_torch.pt"
    torch.save({"weights": torch.ones(2), "payload": RunsACommand(marker)}, path)
    with pytest.raises(UnsupportedFileError, match="written by torch.save"):
        minitorch.load(path)
    assert not marker.exists()


def test_a_plain_torch_save_file_is_refused_too(tmp_path):
    torch.save(torch.ones(2), tmp_path / "weights.pt")
    with pytest.raises(UnsupportedFileError, match=r"weights.pt was written by torch.save"):
        minitorch.load(tmp_path / "weights.pt")


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "not a zip archive"),
        (b"\x00\x01garbage bytes", "not a zip archive; it starts with b'\\\\x00\\\\x01garb"),
        (b"PK\x03\x04 truncated", "damaged zip archive"),
    ],
)
def test_garbage_is_refused(content, message):
    with pytest.raises(UnsupportedFileError, match=message):
        minitorch.load(io.BytesIO(content))


def archive(manifest, files=None, compression=zipfile.ZIP_STORED, manifest_text=None):
    """A zip built by hand, as an attacker (or a damaged disk) might."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as zf:
        zf.writestr("minitorch.json", manifest_text or json.dumps(manifest))
        for name, data in (files or {}).items():
            zf.writestr(name, data)
    buffer.seek(0)
    return buffer


def manifest_with(root):
    return {"format": "minitorch.save", "version": 1, "byteorder": "little", "root": root}


def tensor_entry(**overrides):
    entry = {"tensor": 0, "dtype": "float32", "shape": [2], "device": "cpu"}
    entry.update(overrides)
    return entry


EIGHT_BYTES = {"tensors/0": b"\x00" * 8}


@pytest.mark.parametrize(
    "root, files, message",
    [
        ({"eval": "__import__('os').system('id')"}, {}, "unknown entry type 'eval'"),
        ({"list": 3}, {}, "a list entry must hold a list"),
        ({"dict": [[1]]}, {}, r"must be a \[key, value\] pair"),
        ({"dict": [[{"list": []}, 1]]}, {}, "key must be a number, string or tuple"),
        (tensor_entry(dtype="object"), EIGHT_BYTES, "unsupported dtype 'object'"),
        (tensor_entry(shape=[-2]), EIGHT_BYTES, r"bad shape \[-2\]"),
        (tensor_entry(shape="2"), EIGHT_BYTES, "bad shape '2'"),
        (tensor_entry(shape=[3]), EIGHT_BYTES, "should have 12 bytes, found 8"),
        (tensor_entry(tensor=1), EIGHT_BYTES, "tensor 1 is missing from the archive"),
        (tensor_entry(tensor=-1), EIGHT_BYTES, "bad tensor number -1"),
        (tensor_entry(device="quantum"), EIGHT_BYTES, "bad device 'quantum'"),
    ],
)
def test_crafted_manifests_are_refused(root, files, message):
    with pytest.raises(UnsupportedFileError, match=message):
        minitorch.load(archive(manifest_with(root), files))


def test_crafted_archives_are_refused():
    good_root = manifest_with(tensor_entry())
    with pytest.raises(UnsupportedFileError, match="compressed entries"):
        minitorch.load(archive(good_root, EIGHT_BYTES, compression=zipfile.ZIP_DEFLATED))
    with pytest.raises(UnsupportedFileError, match="damaged minitorch.json"):
        minitorch.load(archive(None, manifest_text="{not json"))
    with pytest.raises(UnsupportedFileError, match="damaged minitorch.json|nested too deeply"):
        minitorch.load(archive(None, manifest_text="[" * 100_000 + "]" * 100_000))
    deep = json.dumps(manifest_with(None)).replace("null", '{"list": [' * 5000 + "]}" * 5000)
    with pytest.raises(UnsupportedFileError, match="nested too deeply|damaged"):
        minitorch.load(archive(None, manifest_text=deep))
    with pytest.raises(UnsupportedFileError, match="format version 99"):
        minitorch.load(archive({**manifest_with(1), "version": 99}))
    with pytest.raises(UnsupportedFileError, match="no minitorch.save manifest"):
        minitorch.load(archive({"root": 1}))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("something_else.txt", "hello")
    with pytest.raises(UnsupportedFileError, match="without minitorch.json"):
        minitorch.load(io.BytesIO(buffer.getvalue()))


def test_the_error_is_an_unpickling_error_like_torch_loads():
    assert issubclass(UnsupportedFileError, pickle.UnpicklingError)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only message")
def test_cuda_tensors_on_a_cpu_only_machine_need_map_location():
    stream = archive(manifest_with(tensor_entry(device="cuda:0")), EIGHT_BYTES)
    with pytest.raises(RuntimeError, match="map_location='cpu'"):
        minitorch.load(stream)
    stream.seek(0)
    assert minitorch.load(stream, map_location="cpu").tolist() == [0.0, 0.0]


@pytest.mark.cuda
def test_cuda_tensors_round_trip_to_their_device():
    x = minitorch.randn(3, device="cuda")
    loaded = round_trip({"x": x})
    assert loaded["x"].device.type == "cuda"
    assert torch.equal(loaded["x"]._data, x._data)
    assert round_trip(x, map_location="cpu").device.type == "cpu"
