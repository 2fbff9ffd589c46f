"""A corpus of hostile model inputs, built at test time (nothing is downloaded).

Each :class:`Case` builds one input in an empty directory of its own and names
the cause its one-line :class:`qviz.LoadError` must give. Cases that carry code
(``code=True``) are built so that the code, if it ever ran, would create the
file :data:`MARKER` in that directory; the tests check it never appears.

Every file written here is small (the largest is under 5 MB): zip bombs are
members whose *declared* size is huge, or that compress 1000:1, or are many.

Run as a script, this module is the CLI driver used by
``tests/test_hostile_inputs.py``: it runs ``qviz.cli.main(argv)`` for each job
of a JSON list in one process (TensorFlow is imported once, first, the way the
CLI imports it) and writes one JSON line per job with the exit status, the
seconds it took and what went to file descriptors 1 and 2::

    python tests/hostile.py JOBS.json RESULTS.jsonl CAPTURE_DIR
"""

from __future__ import annotations

import base64
import functools
import io
import json
import os
import socket
import stat
import struct
import sys
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

MARKER = "PWNED"
SAMPLES_DIR = Path(__file__).resolve().parent.parent / "sample_models"
SAMPLES = {"lenet": "lenet_digits.keras", "mobilenet": "mobilenet_block.keras",
           "resnet": "resnet_block.keras", "fused_bn": "fused_bn_tf_keras.h5"}
UNSAFE = "refused in safe mode"


@dataclass(frozen=True)
class Case:
    """One hostile input.

    Attributes:
        id: the pytest id.
        build: makes the input inside the given empty directory; returns the path to load.
        cause: a fragment the LoadError message must contain.
        upload: the input is one regular file the app's upload path can take.
        code: running the file's code would create ``<dir>/MARKER``.
        unsafe_marker: with ``safe_mode=False`` the marker does appear (the test can fail).
        cli: also run through ``qviz info`` (the CLI driver).
        upload_cause: the cause when uploaded to the app, if not ``cause``.
    """

    id: str
    build: Callable[[Path], Path]
    cause: str
    upload: bool = True
    code: bool = False
    unsafe_marker: bool = False
    cli: bool = True
    upload_cause: str | None = None


# -- helpers ----------------------------------------------------------------------------------


def sample_bytes(name: str) -> bytes:
    return (SAMPLES_DIR / SAMPLES[name]).read_bytes()


@functools.cache
def sample_graph_def(name: str) -> bytes:
    """The sample frozen by qviz, as a serialized GraphDef."""
    import qviz

    return qviz.load(SAMPLES_DIR / SAMPLES[name]).to_graph_def().SerializeToString()


@functools.cache
def sample_pbtxt(name: str) -> str:
    from google.protobuf import text_format

    from qviz.ir.proto import pb

    gd = pb().GraphDef()
    gd.ParseFromString(sample_graph_def(name))
    return text_format.MessageToString(gd)


def write(path: Path, data: bytes | str) -> Path:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def noise(n: int, seed: int = 7) -> bytes:
    import numpy as np

    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def flip(data: bytes, offset: int, mask: int = 0xFF) -> bytes:
    b = bytearray(data)
    b[offset] ^= mask
    return bytes(b)


def zip_members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


def make_zip(members, compression=zipfile.ZIP_DEFLATED) -> bytes:
    """``members``: name → bytes, or a list of (ZipInfo or name, bytes)."""
    buf = io.BytesIO()
    items = members.items() if isinstance(members, dict) else members
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for name, data in items:
            zf.writestr(name, data)
    return buf.getvalue()


def keras_with_config(config: bytes | str, base: str = "lenet") -> bytes:
    """A real sample archive with its config.json replaced."""
    members = zip_members(sample_bytes(base))
    members["config.json"] = config.encode() if isinstance(config, str) else config
    return make_zip(members)


def edited_config(edit: Callable[[dict], None], base: str = "lenet") -> bytes:
    members = zip_members(sample_bytes(base))
    config = json.loads(members["config.json"])
    edit(config)
    return keras_with_config(json.dumps(config), base)


def first_layer(config: dict, class_name: str) -> dict:
    return next(layer for layer in config["config"]["layers"] if layer["class_name"] == class_name)


def _patch_headers(data: bytes, member: str, local_offset: int, central_offset: int, patch) -> bytes:
    """Apply ``patch(buffer, offset)`` to a field of ``member``'s local header and central directory entry."""
    b = bytearray(data)
    name = member.encode()
    for sig, name_len_at, name_at, field_at in ((b"PK\x03\x04", 26, 30, local_offset),
                                                 (b"PK\x01\x02", 28, 46, central_offset)):
        pos = 0
        while (pos := b.find(sig, pos)) >= 0:
            n = struct.unpack_from("<H", b, pos + name_len_at)[0]
            if b[pos + name_at:pos + name_at + n] == name:
                patch(b, pos + field_at)
            pos += 4
    return bytes(b)


def patch_declared_size(data: bytes, member: str, size: int) -> bytes:
    """Set the uncompressed size a zip's local header and central directory
    declare for ``member``, leaving its data alone."""
    return _patch_headers(data, member, 22, 24, lambda b, at: struct.pack_into("<I", b, at, size))


def symlink_member(name: str, target: str) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info, target.encode()


def marker_lambda_source(directory: Path) -> str:
    """A lambda that creates the marker file when called, then returns its input."""
    return f"lambda t: (open({str(directory / MARKER)!r}, 'w').close(), t)[1]"


def _remove_marker(directory: Path) -> None:
    (directory / MARKER).unlink(missing_ok=True)   # building a Lambda model calls it once


# -- builders: damaged samples ------------------------------------------------------------------


def _truncated_sample(name: str, keep: float | int, suffix: str | None = None):
    def build(d: Path) -> Path:
        data = sample_bytes(name)
        n = int(len(data) * keep) if isinstance(keep, float) else keep
        return write(d / (SAMPLES[name] if suffix is None else f"{name}{suffix}"), data[:n])
    return build


def _keras_member_flipped(name: str):
    """One bit flipped inside config.json's stored data: the CRC no longer matches."""
    def build(d: Path) -> Path:
        members = zip_members(sample_bytes(name))
        data = make_zip(members, zipfile.ZIP_STORED)
        at = data.find(b'"class_name"')
        return write(d / SAMPLES[name], flip(data, at + 2, 0x01))
    return build


def _keras_directory_zeroed(name: str):
    """The end-of-central-directory record overwritten: not a zip any more."""
    def build(d: Path) -> Path:
        data = bytearray(sample_bytes(name))
        at = data.rfind(b"PK\x05\x06")
        data[at:at + 22] = bytes(22)
        return write(d / SAMPLES[name], bytes(data))
    return build


def _h5_superblock_flipped(d: Path) -> Path:
    data = sample_bytes("fused_bn")
    return write(d / SAMPLES["fused_bn"], flip(data, 9))     # superblock version byte


def _h5_zero_after_header(d: Path) -> Path:
    data = sample_bytes("fused_bn")
    return write(d / SAMPLES["fused_bn"], data[:512] + bytes(len(data) - 512))


def _pb_truncated(name: str):
    def build(d: Path) -> Path:
        data = sample_graph_def(name)
        return write(d / f"{name}.pb", data[: len(data) // 2])
    return build


def _pb_first_byte(d: Path) -> Path:
    return write(d / "lenet.pb", b"\xff" + sample_graph_def("lenet")[1:])   # wire type 7: invalid


def _pb_bad_length(d: Path) -> Path:
    data = sample_graph_def("lenet")
    # the first node's length prefix says it runs past the end of the file
    return write(d / "lenet.pb", data[:1] + b"\xff\xff\xff\xff\x0f" + data[2:200])


def _pbtxt_truncated(name: str):
    def build(d: Path) -> Path:
        text = sample_pbtxt(name)
        return write(d / f"{name}.pbtxt", text[: len(text) // 2])
    return build


def _pbtxt_garbage_inside(d: Path) -> Path:
    text = sample_pbtxt("lenet")
    mid = text.index("\nnode {", len(text) // 3) + 1     # between two nodes
    return write(d / "lenet.pbtxt", text[:mid].encode() + b"\x00\xff}}}{{\n" + text[mid:].encode())


# -- builders: wrong content, special files, names ---------------------------------------------


def _renamed(content: Callable[[], bytes], filename: str):
    def build(d: Path) -> Path:
        return write(d / filename, content())
    return build


def _fifo(filename: str):
    def build(d: Path) -> Path:
        os.mkfifo(d / filename)
        return d / filename
    return build


def _symlink(filename: str, target: str):
    def build(d: Path) -> Path:
        os.symlink(target, d / filename)
        return d / filename
    return build


def _symlink_loop(d: Path) -> Path:
    os.symlink(d / "b.pb", d / "a.pb")
    os.symlink(d / "a.pb", d / "b.pb")
    return d / "a.pb"


def _socket_file(d: Path) -> Path:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    cwd = os.getcwd()
    try:
        os.chdir(d)   # a relative name: socket paths are limited to ~108 bytes
        sock.bind("x.pb")
    finally:
        os.chdir(cwd)
        sock.close()
    return d / "x.pb"


def _directory(filename: str):
    def build(d: Path) -> Path:
        (d / filename).mkdir()
        write(d / filename / "junk.txt", "hi")
        return d / filename
    return build


def _unreadable(d: Path) -> Path:
    path = write(d / "secret.pb", sample_graph_def("lenet"))
    path.chmod(0)
    return path


# -- builders: zip archives ----------------------------------------------------------------------


def _keras_bomb_ratio(d: Path) -> Path:
    """config.json really unpacks to 65 MB of spaces (~1000:1)."""
    members = zip_members(sample_bytes("lenet"))
    members["config.json"] = members["config.json"] + b" " * (65 * 2**20)
    return write(d / "bomb.keras", make_zip(members))


def _keras_bomb_declared(d: Path) -> Path:
    """The weights member claims to unpack to 4 GB."""
    data = make_zip(zip_members(sample_bytes("lenet")), zipfile.ZIP_STORED)
    return write(d / "declared.keras", patch_declared_size(data, "model.weights.h5", 0xFFFFFF00))


def _keras_big_config(d: Path) -> Path:
    """config.json stored (ratio ~170:1, under the bomb limit) but declared 100 MB."""
    members = zip_members(sample_bytes("lenet"))
    members["config.json"] = members["config.json"] + b" " * (600_000 - len(members["config.json"]))
    data = make_zip(members, zipfile.ZIP_STORED)
    return write(d / "bigconfig.keras", patch_declared_size(data, "config.json", 100 * 2**20))


def _keras_many_members(d: Path) -> Path:
    members = zip_members(sample_bytes("mobilenet"))
    members.update({f"assets/{i}": b"" for i in range(10_001)})
    return write(d / "many.keras", make_zip(members, zipfile.ZIP_STORED))


def _keras_with_member(name: str, data: bytes = b"x"):
    def build(d: Path) -> Path:
        members = list(zip_members(sample_bytes("mobilenet")).items()) + [(name, data)]
        return write(d / "member.keras", make_zip(members))
    return build


def _keras_symlink_member(d: Path) -> Path:
    members = list(zip_members(sample_bytes("mobilenet")).items()) + [symlink_member("assets/link", "/etc/passwd")]
    return write(d / "symlink.keras", make_zip(members))


def _stored_sample(name: str = "lenet") -> bytes:
    return make_zip(zip_members(sample_bytes(name)), zipfile.ZIP_STORED)


def _keras_encrypted(member: str):
    """The "encrypted" flag set on one member: zipfile wants a password (RuntimeError)."""
    def build(d: Path) -> Path:
        def encrypt(b, at):
            b[at] |= 1
        return write(d / "encrypted.keras", _patch_headers(_stored_sample(), member, 6, 8, encrypt))
    return build


def _keras_compression_method(d: Path) -> Path:
    def method(b, at):
        struct.pack_into("<H", b, at, 99)   # AES: not supported by zipfile
    return write(d / "method.keras", _patch_headers(_stored_sample(), "config.json", 8, 10, method))


def _keras_header_name_mismatch(d: Path) -> Path:
    """The local header names config.json "config.jsoX": directory and data disagree."""
    data = bytearray(_stored_sample())
    at = data.find(b"config.json")   # the first occurrence is the local header's
    data[at + len("config.jso")] = ord("X")
    return write(d / "mismatch.keras", bytes(data))


def _keras_duplicate_config(d: Path) -> Path:
    """Two config.json members: a clean one first, then one with a Lambda layer."""
    members = zip_members(sample_bytes("lenet"))
    config = json.loads(members["config.json"])
    layer = first_layer(config, "ReLU")
    layer.update(class_name="Lambda", module="keras.layers", registered_name=None)
    layer["config"].update(function={"class_name": "__lambda__", "config": {"value": ["AAAA", None, None]}})
    items = list(members.items()) + [("config.json", json.dumps(config).encode())]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # zipfile: "Duplicate name"
        return write(d / "duplicate.keras", make_zip(items))


def _keras_no_weights(d: Path) -> Path:
    members = zip_members(sample_bytes("lenet"))
    del members["model.weights.h5"]
    return write(d / "noweights.keras", make_zip(members))


def _keras_config(config: bytes | str, filename: str = "model.keras"):
    def build(d: Path) -> Path:
        return write(d / filename, keras_with_config(config))
    return build


def _keras_edited(edit: Callable[[dict], None], filename: str = "model.keras"):
    def build(d: Path) -> Path:
        return write(d / filename, edited_config(edit))
    return build


def _no_config(d: Path) -> Path:
    members = zip_members(sample_bytes("lenet"))
    del members["config.json"]
    return write(d / "noconfig.keras", make_zip(members))


def _huge_layer_name(config: dict) -> None:
    first_layer(config, "Conv2D")["config"]["name"] = base64.b64encode(noise(3 * 2**20)).decode()


def _unknown_class(config: dict) -> None:
    layer = first_layer(config, "Conv2D")
    layer["class_name"] = "Conv9D" + "x" * 50_000


def _weights_garbage(d: Path) -> Path:
    members = zip_members(sample_bytes("lenet"))
    members["model.weights.h5"] = noise(4096)
    return write(d / "badweights.keras", make_zip(members))


# -- builders: code ------------------------------------------------------------------------------


def _k3_lambda(suffix: str):
    def build(d: Path) -> Path:
        import keras

        inp = keras.Input((4,), name="x")
        model = keras.Model(inp, keras.layers.Lambda(eval(marker_lambda_source(d)), name="pwn")(inp))
        model.save(d / f"lambda{suffix}")
        _remove_marker(d)
        return d / f"lambda{suffix}"
    return build


def _k3_nested_lambda(d: Path) -> Path:
    """A Lambda inside a Sequential inside a Functional model."""
    import keras

    inner = keras.Sequential([keras.layers.Dense(4, name="fc"),
                              keras.layers.Lambda(eval(marker_lambda_source(d)), name="hidden")], name="block")
    inp = keras.Input((4,), name="x")
    keras.Model(inp, inner(inp)).save(d / "nested.keras")
    _remove_marker(d)
    return d / "nested.keras"


def _tfk_lambda_h5(d: Path) -> Path:
    import tf_keras

    inp = tf_keras.Input((4,), name="x")
    model = tf_keras.Model(inp, tf_keras.layers.Lambda(eval(marker_lambda_source(d)), name="pwn")(inp))
    model.save(d / "lambda.h5")
    _remove_marker(d)
    return d / "lambda.h5"


def _keras_lambda_activation(d: Path) -> Path:
    """A Dense whose activation is a serialized Python lambda (no Lambda layer)."""
    from keras.src.utils.python_utils import func_dump

    code = func_dump(eval(marker_lambda_source(d)))

    def edit(config):
        first_layer(config, "Dense")["config"]["activation"] = {
            "module": None, "class_name": "__lambda__", "config": {"value": code}, "registered_name": None}
    return write(d / "activation.keras", edited_config(edit))


def _keras_os_system(d: Path) -> Path:
    """A layer entry hand-edited to name ``os.system`` (the CVE-2024-3660 shape)."""
    def edit(config):
        layer = first_layer(config, "Conv2D")
        layer.update(module="os", class_name="system", registered_name="system")
        layer["config"]["name"] = f"touch {d / MARKER}"
    return write(d / "ossystem.keras", edited_config(edit))


def _keras_subprocess(d: Path) -> Path:
    """An activation function named ``subprocess.getoutput``."""
    def edit(config):
        first_layer(config, "Dense")["config"]["activation"] = {
            "module": "subprocess", "class_name": "function", "config": "getoutput", "registered_name": None}
    return write(d / "subprocess.keras", edited_config(edit))


def _keras_get_file(d: Path) -> Path:
    """A Keras API that is not a layer (``keras.utils.get_file`` downloads files)."""
    def edit(config):
        first_layer(config, "Dense")["config"]["activation"] = {
            "module": "keras.utils", "class_name": "function", "config": "get_file", "registered_name": None}
    return write(d / "getfile.keras", edited_config(edit))


def write_file_graph_def(marker: Path):
    """x → Identity y, with a WriteFile of ``marker`` as a control dependency of y."""
    import tensorflow as tf

    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
        w = tf.raw_ops.WriteFile(filename=tf.constant(str(marker)), contents=tf.constant("pwned"), name="w")
        with tf.control_dependencies([w]):
            tf.identity(x, name="y")
    return g.as_graph_def()


def _pb_write_file(d: Path) -> Path:
    return write(d / "writefile.pb", write_file_graph_def(d / MARKER).SerializeToString())


def _pbtxt_write_file(d: Path) -> Path:
    from google.protobuf import text_format

    return write(d / "writefile.pbtxt", text_format.MessageToString(write_file_graph_def(d / MARKER)))


def _pbtxt_op(op: str, filename: str):
    def build(d: Path) -> Path:
        return write(d / filename, f'''
node {{ name: "x" op: "Placeholder" attr {{ key: "dtype" value {{ type: DT_FLOAT }} }} }}
node {{ name: "cb" op: "{op}" input: "x"
       attr {{ key: "token" value {{ s: "pyfunc_0" }} }}
       attr {{ key: "Tin" value {{ list {{ type: DT_FLOAT }} }} }}
       attr {{ key: "Tout" value {{ list {{ type: DT_FLOAT }} }} }} }}
''')
    return build


def _pbtxt_dump_tensor(d: Path) -> Path:
    """DumpTensor (a quantization debugging op) writes ``<log_dir_path>/<file_name>`` when run."""
    return write(d / "dump.pbtxt", f'''
node {{ name: "x" op: "Placeholder" attr {{ key: "dtype" value {{ type: DT_FLOAT }} }} }}
node {{ name: "dump" op: "DumpTensor" input: "x"
       attr {{ key: "T" value {{ type: DT_FLOAT }} }}
       attr {{ key: "log_dir_path" value {{ s: "{d}" }} }}
       attr {{ key: "file_name" value {{ s: "{MARKER}" }} }}
       attr {{ key: "enabled" value {{ b: true }} }}
       attr {{ key: "func_name" value {{ s: "f" }} }}
       attr {{ key: "node_name" value {{ s: "n" }} }} }}
node {{ name: "y" op: "Identity" input: "x" input: "^dump" attr {{ key: "T" value {{ type: DT_FLOAT }} }} }}
''')


def _pbtxt_read_file_in_function(d: Path) -> Path:
    """ReadFile hidden in the function library, called through PartitionedCall."""
    return write(d / "libfn.pbtxt", '''
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_STRING } } }
node { name: "call" op: "StatefulPartitionedCall" input: "x"
       attr { key: "f" value { func { name: "reader" } } }
       attr { key: "Tin" value { list { type: DT_STRING } } }
       attr { key: "Tout" value { list { type: DT_STRING } } } }
library { function {
  signature { name: "reader" input_arg { name: "path" type: DT_STRING }
               output_arg { name: "out" type: DT_STRING } is_stateful: true }
  node_def { name: "rf" op: "ReadFile" input: "path" }
  ret { key: "out" value: "rf:contents:0" }
} }
''')


# -- builders: GraphDef structure ----------------------------------------------------------------


def _pbtxt(text: str, filename: str):
    def build(d: Path) -> Path:
        return write(d / filename, text)
    return build


def _deep_pbtxt(levels: int):
    def build(d: Path) -> Path:
        head = 'attr { key: "k" value { func { name: "f" '
        text = ('node { name: "x" op: "NoOp" ' + head * levels + "} } }" * levels + " }\n")
        return write(d / "deep.pbtxt", text)
    return build


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    n, varint = len(payload), bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        varint.append(byte | (0x80 if n else 0))
        if not n:
            break
    return _varint(number << 3 | 2) + bytes(varint) + payload


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _deep_pb(levels: int):
    """AttrValue.func.attr[k].func.attr[k]… ``levels`` deep, in binary."""
    def build(d: Path) -> Path:
        value = b""
        for _ in range(levels):
            entry = _field(1, b"k") + _field(2, value)           # map entry: key, AttrValue
            value = _field(10, _field(1, b"f") + _field(2, entry))   # AttrValue.func = NameAttrList
        node = _field(1, b"x") + _field(2, b"NoOp") + _field(5, _field(1, b"a") + _field(2, value))
        return write(d / "deep.pb", _field(1, node))
    return build


CYCLE = '''
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "a" op: "Add" input: "x" input: "b" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "b" op: "Neg" input: "a" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "y" op: "Identity" input: "b" attr { key: "T" value { type: DT_FLOAT } } }
'''


# -- builders: SavedModel directories ------------------------------------------------------------


def _saved_model(fn_body: Callable, d: Path, name: str = "sm") -> Path:
    import tensorflow as tf

    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
        def serve(self, x):
            return fn_body(x)

    module = M()
    path = d / name
    tf.saved_model.save(module, str(path), signatures={"serving_default": module.serve})
    return path


@functools.cache
def _clean_saved_model_files() -> dict[str, bytes]:
    """A small SavedModel with a variable, as relative path → bytes."""
    import tempfile

    import tensorflow as tf

    with tempfile.TemporaryDirectory() as tmp:
        class M(tf.Module):
            def __init__(self):
                self.w = tf.Variable(tf.ones([4, 2]))

            @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
            def serve(self, x):
                return tf.matmul(x, self.w)

        m = M()
        tf.saved_model.save(m, tmp, signatures={"serving_default": m.serve})
        root = Path(tmp)
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def clean_saved_model(d: Path, name: str = "sm") -> Path:
    root = d / name
    for rel, data in _clean_saved_model_files().items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    (root / "variables").mkdir(exist_ok=True)
    (root / "assets").mkdir(exist_ok=True)
    return root


def _sm_write_file(d: Path) -> Path:
    import tensorflow as tf

    def body(x):
        w = tf.io.write_file(str(d / MARKER), tf.strings.as_string(tf.reduce_sum(x)))
        with tf.control_dependencies([w]):
            return tf.identity(x)
    return _saved_model(body, d)


def _sm_read_file(d: Path) -> Path:
    import tensorflow as tf

    def body(x):
        size = tf.strings.length(tf.io.read_file("/etc/hostname"))
        return x + tf.cast(size, tf.float32) * 0.0
    return _saved_model(body, d)


def _sm_py_function(d: Path) -> Path:
    import tensorflow as tf

    marker = str(d / MARKER)

    def py(x):
        open(marker, "w").close()
        return x

    return _saved_model(lambda x: tf.numpy_function(py, [x], tf.float32), d)


def _sm_variables_fifo(d: Path) -> Path:
    root = clean_saved_model(d)
    data = root / "variables" / "variables.data-00000-of-00001"
    data.unlink()
    os.mkfifo(data)
    return root


def _sm_symlink_inside(d: Path) -> Path:
    root = clean_saved_model(d)
    os.symlink("/etc/passwd", root / "assets" / "vocab.txt")
    return root


def _sm_pb_to_dev_zero(d: Path) -> Path:
    root = clean_saved_model(d)
    (root / "saved_model.pb").unlink()
    os.symlink("/dev/zero", root / "saved_model.pb")
    return root


def _sm_pb_garbage(d: Path) -> Path:
    root = clean_saved_model(d)
    write(root / "saved_model.pb", noise(4096))
    return root


def _sm_pb_empty(d: Path) -> Path:
    root = clean_saved_model(d)
    write(root / "saved_model.pb", b"")
    return root


def _sm_variables_truncated(d: Path) -> Path:
    root = clean_saved_model(d)
    index = root / "variables" / "variables.index"
    index.write_bytes(index.read_bytes()[:20])
    return root


def _sm_many_entries(d: Path) -> Path:
    root = clean_saved_model(d)
    for i in range(10_001):
        (root / "assets" / str(i)).touch()
    return root


def _sm_deep_pbtxt(d: Path) -> Path:
    """Only a saved_model.pbtxt, nested 5,000 levels deep."""
    root = d / "sm"
    root.mkdir()
    head = ('meta_graphs { graph_def { node { name: "x" op: "NoOp" '
            + 'attr { key: "k" value { func { name: "f" ' * 5000)
    write(root / "saved_model.pbtxt", head + "} } }" * 5000 + " } } }\n")
    return root


def _sm_variables_missing(d: Path) -> Path:
    root = clean_saved_model(d)
    for p in (root / "variables").iterdir():
        p.unlink()
    return root


# -- h5 files that reach outside themselves ------------------------------------------------------


def _h5_redirected(how: str):
    """The fused_bn sample with its first kernel stored outside the file: HDF5
    external storage on a FIFO, an external link to a FIFO, or a virtual dataset
    mapped from another file."""
    def build(d: Path) -> Path:
        import h5py

        path = write(d / f"{how}.h5", sample_bytes("fused_bn"))
        os.mkfifo(d / "pipe")
        with h5py.File(path, "r+") as f:
            _redirect_first_kernel(f, how, d / "pipe")
        return path
    return build


def _redirect_first_kernel(f, how: str, pipe: Path) -> None:
    import h5py
    import numpy as np

    names = []
    f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) and o.ndim == 4 else None)
    name = names[0]
    ds = f[name]
    shape, dtype = ds.shape, ds.dtype
    del f[name]
    if how == "external_storage":
        size = int(np.prod(shape)) * dtype.itemsize
        f.create_dataset(name, shape=shape, dtype=dtype, external=[(str(pipe), 0, size)])
    elif how == "external_link":
        f[name] = h5py.ExternalLink(str(pipe), "/data")
    else:
        layout = h5py.VirtualLayout(shape=shape, dtype=dtype)
        layout[...] = h5py.VirtualSource(str(pipe), "data", shape=shape, dtype=dtype)
        f.create_virtual_dataset(name, layout)


def _keras_weights_redirected(how: str):
    """A .keras archive whose model.weights.h5 keeps a kernel in a FIFO (see :func:`_h5_redirected`)."""
    def build(d: Path) -> Path:
        import h5py

        os.mkfifo(d / "pipe")
        members = zip_members(sample_bytes("lenet"))
        buf = io.BytesIO(members["model.weights.h5"])
        with h5py.File(buf, "r+") as f:
            _redirect_first_kernel(f, how, d / "pipe")
        members["model.weights.h5"] = buf.getvalue()
        return write(d / f"{how}.keras", make_zip(members))
    return build


def _h5_no_model(d: Path) -> Path:
    import h5py

    with h5py.File(d / "weights.h5", "w") as f:
        f.create_dataset("w", data=[1.0, 2.0])
    return d / "weights.h5"


def _h5_config(config) -> Callable[[Path], Path]:
    def build(d: Path) -> Path:
        import h5py

        path = write(d / "config.h5", sample_bytes("fused_bn"))
        with h5py.File(path, "r+") as f:
            f.attrs["model_config"] = config
        return path
    return build


# -- the corpus ----------------------------------------------------------------------------------


def _lenet_pb() -> bytes:
    return sample_graph_def("lenet")


CORPUS: list[Case] = [
    # damaged samples
    *[Case(f"{n}.keras-truncated-half", _truncated_sample(n, 0.5), "not a valid zip file")
      for n in ("lenet", "mobilenet", "resnet")],
    Case("lenet.keras-truncated-100B", _truncated_sample("lenet", 100), "not a valid zip file"),
    *[Case(f"{n}.keras-bit-flipped", _keras_member_flipped(n), "is damaged")
      for n in ("lenet", "mobilenet", "resnet")],
    Case("lenet.keras-directory-zeroed", _keras_directory_zeroed("lenet"), "not a valid zip file"),
    Case("fused_bn.h5-truncated-half", _truncated_sample("fused_bn", 0.5), "HDF5 file could not be read"),
    Case("fused_bn.h5-truncated-8B", _truncated_sample("fused_bn", 8), "HDF5 file could not be read"),
    Case("fused_bn.h5-superblock-flipped", _h5_superblock_flipped, "HDF5 file could not be read"),
    Case("fused_bn.h5-zeroed-after-512B", _h5_zero_after_header, "HDF5 file could not be read"),
    *[Case(f"{n}.pb-truncated-half", _pb_truncated(n), "not a binary GraphDef")
      for n in ("lenet", "fused_bn")],
    Case("lenet.pb-invalid-wire-type", _pb_first_byte, "not a binary GraphDef"),
    Case("lenet.pb-length-past-end", _pb_bad_length, "not a binary GraphDef"),
    *[Case(f"{n}.pbtxt-truncated-half", _pbtxt_truncated(n), "malformed text GraphDef")
      for n in ("lenet", "mobilenet")],
    Case("lenet.pbtxt-garbage-inside", _pbtxt_garbage_inside, "malformed text GraphDef"),
    # empty, noise, wrong suffix
    *[Case(f"empty{s}", _renamed(lambda: b"", f"empty{s}"), "the file is empty")
      for s in (".keras", ".h5", ".hdf5", ".pb", ".pbtxt")],
    Case("noise.keras", _renamed(lambda: noise(4096), "noise.keras"), "not a valid zip file"),
    Case("noise.h5", _renamed(lambda: noise(4096), "noise.h5"), "not an HDF5 file"),
    Case("noise.pb", _renamed(lambda: noise(4096), "noise.pb"), "not a binary GraphDef"),
    Case("noise.pbtxt", _renamed(lambda: noise(4096), "noise.pbtxt"), "malformed text GraphDef"),
    Case("keras-named.h5", _renamed(lambda: sample_bytes("lenet"), "model.h5"), "not an HDF5 file"),
    Case("keras-named.pb", _renamed(lambda: sample_bytes("lenet"), "model.pb"), "not a binary GraphDef"),
    Case("keras-named.pbtxt", _renamed(lambda: sample_bytes("lenet"), "model.pbtxt"), "malformed text GraphDef"),
    Case("h5-named.keras", _renamed(lambda: sample_bytes("fused_bn"), "model.keras"), "not a valid zip file"),
    Case("pb-named.keras", _renamed(_lenet_pb, "model.keras"), "not a valid zip file"),
    Case("pb-named.h5", _renamed(_lenet_pb, "model.h5"), "not an HDF5 file"),
    Case("pb-named.pbtxt", _renamed(_lenet_pb, "model.pbtxt"), "malformed text GraphDef"),
    Case("pbtxt-named.pb", _renamed(lambda: sample_pbtxt("lenet").encode(), "model.pb"), "not a binary GraphDef"),
    Case("zip-named.pb", _renamed(lambda: make_zip({"a": b"b"}), "model.pb"), "not a binary GraphDef"),
    Case("unknown-suffix", _renamed(lambda: sample_bytes("lenet"), "model.onnx"), "unknown model format '.onnx'",
         upload_cause="unsupported file type '.onnx'"),
    Case("no-suffix", _renamed(lambda: sample_bytes("lenet"), "model"), "unknown model format '(no extension)'",
         upload_cause="unsupported file type '(none)'"),
    # special files
    *[Case(f"fifo{s}", _fifo(f"x{s}"), "not a regular file (a FIFO)", upload=False)
      for s in (".pb", ".keras", ".h5", ".pbtxt")],
    Case("dev-zero.pb", _symlink("x.pb", "/dev/zero"), "not a regular file (a character device)", upload=False),
    Case("dev-urandom.keras", _symlink("x.keras", "/dev/urandom"), "not a regular file (a character device)",
         upload=False),
    Case("dev-null.h5", _symlink("x.h5", "/dev/null"), "not a regular file (a character device)", upload=False),
    Case("socket.pb", _socket_file, "not a regular file (a socket)", upload=False),
    Case("directory.pb", _directory("x.pb"), "not a SavedModel", upload=False),
    Case("dangling-symlink.pb", _symlink("x.pb", "/nonexistent/qviz/model.pb"), "no such file or directory",
         upload=False),
    Case("symlink-loop.pb", _symlink_loop, "cannot be read: Too many levels of symbolic links", upload=False),
    Case("no-read-permission.pb", _unreadable, "permission denied", upload=False),
    # names
    Case("name-newline", _renamed(lambda: noise(64), "evil\nname.pb"), "not a binary GraphDef"),
    Case("name-ansi-escape", _renamed(lambda: noise(64), "\x1b[31mred\x07\r.pb"), "not a binary GraphDef"),
    Case("name-rtl-override", _renamed(lambda: b"", "model\u202etxt.pb"), "the file is empty"),
    Case("name-unicode", _renamed(lambda: sample_bytes("lenet")[:999], "модель-✓-模型.keras"),
         "not a valid zip file"),
    Case("name-very-long", _renamed(lambda: b"", "n" * 240 + ".pbtxt"), "the file is empty"),
    Case("name-quotes-spaces", _renamed(lambda: b"node {", "it's a \"model\" .pbtxt"), "malformed text GraphDef"),
    Case("name-undecodable-bytes", _renamed(lambda: b"", os.fsdecode(b"bad\xff\xfe.pb")), "the file is empty",
         upload=False),
    # zip bombs and archive tricks (.keras)
    Case("keras-bomb-ratio", _keras_bomb_ratio, "a zip bomb?"),
    Case("keras-bomb-declared-4GB", _keras_bomb_declared, "unpacks to over 2.0 GB"),
    Case("keras-config-declared-100MB", _keras_big_config, "config.json is over 64 MB"),
    Case("keras-10001-members", _keras_many_members, "members, over the limit of 10000"),
    Case("keras-member-dotdot", _keras_with_member("../../evil.txt"), "unsafe path in the archive: '../../evil.txt'"),
    Case("keras-member-absolute", _keras_with_member("/etc/evil"), "unsafe path in the archive: '/etc/evil'"),
    Case("keras-member-backslash", _keras_with_member("..\\..\\evil"), "unsafe path in the archive"),
    Case("keras-member-drive", _keras_with_member("C:evil"), "unsafe path in the archive"),
    Case("keras-member-symlink", _keras_symlink_member, "the archive holds a symbolic link: 'assets/link'"),
    Case("keras-member-long-dotdot", _keras_with_member("../" * 20_000 + "x"), "unsafe path in the archive"),
    Case("keras-no-config", _no_config, "it has no config.json"),
    Case("keras-config-deep-list", _keras_config("[" * 100_000 + "]" * 100_000), "config.json is not valid JSON"),
    Case("keras-config-deep-dict", _keras_config('{"a":' * 100_000 + "1" + "}" * 100_000),
         "config.json is not valid JSON"),
    Case("keras-config-nested-300", _keras_config('{"a":' * 300 + "1" + "}" * 300), "nested over 200 levels deep"),
    Case("keras-config-invalid", _keras_config('{"class_name": "Functional", '), "config.json is not valid JSON"),
    Case("keras-config-list", _keras_config("[1, 2, 3]"), "config.json is not a model config"),
    Case("keras-config-string", _keras_config('"' + "s" * 2**19 + '"'), "config.json is not a model config"),
    Case("keras-config-not-utf8", _keras_config(b"\xff\xfe\x00{"), "config.json is not valid JSON"),
    Case("keras-config-huge-int", _keras_config('{"a": ' + "9" * 100_000 + "}"), "config.json is not valid JSON"),
    Case("keras-config-empty-object", _keras_config("{}"), "Keras could not load the model"),
    Case("keras-config-huge-layer-name", _keras_edited(_huge_layer_name), "Keras could not load the model"),
    Case("keras-config-unknown-class", _keras_edited(_unknown_class), "Keras could not load the model"),
    Case("keras-weights-garbage", _weights_garbage, "Keras could not load the model"),
    Case("keras-no-weights", _keras_no_weights, "Keras could not load the model"),
    Case("keras-config-encrypted", _keras_encrypted("config.json"), "member 'config.json' is encrypted"),
    Case("keras-weights-encrypted", _keras_encrypted("model.weights.h5"), "member 'model.weights.h5' is encrypted"),
    Case("keras-compression-method-99", _keras_compression_method, "the zip is damaged"),
    Case("keras-header-name-mismatch", _keras_header_name_mismatch, "the zip is damaged"),
    Case("keras-duplicate-config-lambda", _keras_duplicate_config, "layer 'relu1' is a Lambda layer", code=True),
    # code
    Case("k3-lambda.keras", _k3_lambda(".keras"), f"layer 'pwn' is a Lambda layer (arbitrary Python code); {UNSAFE}",
         code=True, unsafe_marker=True),
    Case("k3-lambda.h5", _k3_lambda(".h5"), f"layer 'pwn' is a Lambda layer (arbitrary Python code); {UNSAFE}",
         code=True, unsafe_marker=True),
    Case("k3-nested-lambda.keras", _k3_nested_lambda,
         f"layer 'hidden' is a Lambda layer (arbitrary Python code); {UNSAFE}", code=True),
    Case("tf_keras-lambda.h5", _tfk_lambda_h5, f"layer 'pwn' is a Lambda layer (arbitrary Python code); {UNSAFE}",
         code=True, unsafe_marker=True),
    Case("keras-lambda-activation", _keras_lambda_activation,
         "layer 'fc1' holds a Python lambda (arbitrary Python code)",
         code=True),
    Case("keras-module-os-system", _keras_os_system, "uses 'system' from module 'os' (code outside Keras)", code=True),
    Case("keras-module-subprocess", _keras_subprocess, "from module 'subprocess' (code outside Keras)", code=True),
    Case("keras-utils-get_file", _keras_get_file, "could not be deserialized", code=True),
    Case("writefile.pb", _pb_write_file, f"op 'w' is a WriteFile, which touches files, the network or Python; {UNSAFE}",
         code=True, unsafe_marker=True),
    Case("writefile.pbtxt", _pbtxt_write_file, "op 'w' is a WriteFile", code=True),
    Case("pyfunc.pbtxt", _pbtxt_op("PyFunc", "pyfunc.pbtxt"), "op 'cb' is a PyFunc", code=True),
    Case("eager-pyfunc.pbtxt", _pbtxt_op("EagerPyFunc", "eager.pbtxt"), "op 'cb' is a EagerPyFunc", code=True),
    Case("dumptensor.pbtxt", _pbtxt_dump_tensor, "op 'dump' is a DumpTensor", code=True, unsafe_marker=True),
    Case("readfile-in-library.pbtxt", _pbtxt_read_file_in_function, "op 'reader/rf' is a ReadFile", code=True),
    Case("saved-model-writefile", _sm_write_file, "is a WriteFile", code=True, upload=False),
    Case("saved-model-readfile", _sm_read_file, "is a ReadFile", code=True, upload=False),
    Case("saved-model-pyfunc", _sm_py_function, "is a PyFunc", code=True, upload=False),
    # h5 files reaching outside themselves
    Case("h5-external-storage-fifo", _h5_redirected("external_storage"), "stored outside the file"),
    Case("h5-external-link-fifo", _h5_redirected("external_link"), "stored outside the file"),
    Case("h5-virtual-dataset-fifo", _h5_redirected("virtual"), "stored outside the file"),
    *[Case(f"keras-weights-{how.replace('_', '-')}-fifo", _keras_weights_redirected(how), "stored outside the file")
      for how in ("external_storage", "external_link", "virtual")],
    Case("h5-weights-only", _h5_no_model, "no model in it"),
    Case("h5-config-lambda-class", _h5_config(json.dumps({"class_name": "Lambda", "config": {"name": "l"}})),
         "is a Lambda layer"),
    Case("h5-config-deep", _h5_config("[" * 50_000 + "]" * 50_000), "model_config is not valid JSON"),
    Case("h5-config-list", _h5_config("[]"), "model_config is not a model config"),
    Case("h5-config-int", _h5_config(12345), "model_config is not valid JSON"),
    Case("h5-config-garbage", _h5_config(b"\x80\x81" * 1000), "model_config is not valid JSON"),
    # GraphDef structure
    Case("deep-5000.pbtxt", _deep_pbtxt(5000), "nested too deeply"),
    Case("deep-5000.pb", _deep_pb(5000), "not a binary GraphDef"),
    Case("huge-int.pbtxt", _pbtxt('versions { producer: ' + "9" * 100_000 + " }", "hugeint.pbtxt"),
         "malformed text GraphDef"),
    Case("huge-int64.pbtxt", _pbtxt("versions { producer: 99999999999999999999999 }", "int64.pbtxt"),
         "Value out of range"),
    Case("huge-name-unterminated.pbtxt", _pbtxt('node { name: "' + "y" * 100_000 + '" op: Neg" }', "long.pbtxt"),
         "malformed text GraphDef"),
    Case("cycle.pbtxt", _pbtxt(CYCLE, "cycle.pbtxt"), "cycle"),
    Case("self-loop.pbtxt", _pbtxt('node { name: "a" op: "Neg" input: "a" }', "selfloop.pbtxt"), "cycle"),
    Case("dangling-input.pbtxt", _pbtxt('node { name: "y" op: "Neg" input: "ghost:1" }', "dangling.pbtxt"),
         "node 'y' has input 'ghost:1', but no node 'ghost' exists"),
    Case("dangling-control.pbtxt", _pbtxt('node { name: "y" op: "NoOp" input: "^ghost" }', "ctl.pbtxt"),
         "control input 'ghost'"),
    Case("duplicate-names.pbtxt", _pbtxt('node { name: "a" op: "NoOp" } node { name: "a" op: "NoOp" }', "dup.pbtxt"),
         "duplicate node name 'a'"),
    Case("no-nodes.pbtxt", _pbtxt("versions { producer: 1 }", "nonodes.pbtxt"), "the GraphDef has no nodes"),
    Case("no-nodes.pb", _renamed(lambda: b"\x22\x02\x08\x01", "nonodes.pb"), "the GraphDef has no nodes"),
    Case("nameless-node.pbtxt", _pbtxt('node { op: "NoOp" }', "nameless.pbtxt"), "node #0 has no name"),
    # SavedModel directories
    Case("saved-model-variables-fifo", _sm_variables_fifo, "not a regular file (a FIFO)", upload=False),
    Case("saved-model-symlink-inside", _sm_symlink_inside, "holds a symbolic link: 'assets/vocab.txt'",
         upload=False),
    Case("saved-model-pb-dev-zero", _sm_pb_to_dev_zero, "not a SavedModel", upload=False),
    Case("saved-model-pb-garbage", _sm_pb_garbage, "saved_model.pb could not be parsed", upload=False),
    Case("saved-model-pb-empty", _sm_pb_empty, "TensorFlow could not load the SavedModel", upload=False),
    Case("saved-model-index-truncated", _sm_variables_truncated, "TensorFlow could not load the SavedModel",
         upload=False),
    Case("saved-model-10001-entries", _sm_many_entries, "over 10000 entries", upload=False),
    Case("saved-model-pbtxt-deep", _sm_deep_pbtxt, "saved_model.pb could not be parsed", upload=False),
    Case("saved-model-variables-missing", _sm_variables_missing, "TensorFlow could not load the SavedModel",
         upload=False),
]


@dataclass(frozen=True)
class UploadCase:
    """A zipped SavedModel (or other archive) uploaded to the app."""

    id: str
    build: Callable[[Path], bytes]
    filename: str
    cause: str


def _zipped_saved_model(extra=(), prefix: str = "sm/") -> Callable[[Path], bytes]:
    def build(d: Path) -> bytes:
        members = [(prefix + rel, data) for rel, data in _clean_saved_model_files().items()]
        return make_zip(members + list(extra))
    return build


def _zipped_dir(make: Callable[[Path], Path]) -> Callable[[Path], bytes]:
    def build(d: Path) -> bytes:
        root = make(d)
        return make_zip([(str(p.relative_to(root.parent)), p.read_bytes())
                         for p in sorted(root.rglob("*")) if p.is_file()])
    return build


def _zip_bomb(d: Path) -> bytes:
    return make_zip([("sm/saved_model.pb", b""), ("sm/variables/pad", bytes(8 * 2**20))])


def _zip_declared(d: Path) -> bytes:
    data = make_zip([("sm/saved_model.pb", b"\x00" * 100)], zipfile.ZIP_STORED)
    return patch_declared_size(data, "sm/saved_model.pb", 0xFFFFFF00)


UPLOADS: list[UploadCase] = [
    UploadCase("zip-dotdot", _zipped_saved_model([("../../escaped.txt", b"x")]), "m.zip",
               "unsafe path in the archive: '../../escaped.txt'"),
    UploadCase("zip-absolute", _zipped_saved_model([("/tmp/escaped.txt", b"x")]), "m.zip",
               "unsafe path in the archive: '/tmp/escaped.txt'"),
    UploadCase("zip-symlink", _zipped_saved_model([symlink_member("sm/assets/link", "/etc/passwd")]), "m.zip",
               "the archive holds a symbolic link"),
    UploadCase("zip-bomb-ratio", _zip_bomb, "m.zip", "a zip bomb?"),
    UploadCase("zip-bomb-declared", _zip_declared, "m.zip", "the archive unpacks to over"),
    UploadCase("zip-many-members", _zipped_saved_model([(f"sm/assets/{i}", b"") for i in range(10_001)]), "m.zip",
               "members, over the limit of 10000"),
    UploadCase("zip-no-saved-model", lambda d: make_zip({"readme.txt": b"hi"}), "m.zip", "no SavedModel"),
    UploadCase("zip-writefile-saved-model", _zipped_dir(_sm_write_file), "m.zip", "is a WriteFile"),
    UploadCase("zip-encrypted", lambda d: _patch_headers(_zipped_saved_model()(d), "sm/saved_model.pb", 6, 8,
                                                          lambda b, at: b.__setitem__(at, b[at] | 1)),
               "m.zip", "member 'sm/saved_model.pb' is encrypted"),
    UploadCase("zip-truncated", lambda d: _zipped_saved_model()(d)[:1000], "m.zip", "not a valid zip archive"),
    UploadCase("zip-named-pb", lambda d: _zipped_saved_model()(d), "model.pb", "not a binary GraphDef"),
]


def payload(data: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(data).decode()


# -- the CLI driver ------------------------------------------------------------------------------


def _drive(jobs_path: str, results_path: str, capture_dir: str) -> None:
    """Run each job's argv through qviz.cli.main in this process; one JSON line per job."""
    import faulthandler
    import time
    import traceback

    from qviz.cli import _quiet_tensorflow, main

    _quiet_tensorflow()   # imported once, before the clock starts: job times are the work alone
    jobs = json.loads(Path(jobs_path).read_text())
    capture = Path(capture_dir)
    with open(results_path, "w", encoding="utf-8") as results:
        for i, job in enumerate(jobs):
            out_path, err_path = capture / f"{i}.out", capture / f"{i}.err"
            saved = os.dup(1), os.dup(2)
            sys.stdout.flush(), sys.stderr.flush()
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
            faulthandler.dump_traceback_later(job.get("timeout", 60), exit=True, file=saved[1])
            start, rc, crash = time.monotonic(), None, None
            try:
                if job.get("euid") is not None:
                    os.seteuid(job["euid"])
                try:
                    rc = main(job["argv"])
                finally:
                    if job.get("euid") is not None:
                        os.seteuid(0)
            except SystemExit as exc:
                rc = exc.code
            except BaseException:   # noqa: BLE001 — a crash is exactly what we look for
                crash = traceback.format_exc()
                traceback.print_exc()
            finally:
                elapsed = time.monotonic() - start
                faulthandler.cancel_dump_traceback_later()
                sys.stdout.flush(), sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                os.close(saved[0]), os.close(saved[1])
            results.write(json.dumps({
                "id": job["id"], "rc": rc, "crash": crash, "seconds": round(elapsed, 3),
                "stdout": out_path.read_bytes().decode("utf-8", "replace"),
                "stderr": err_path.read_bytes().decode("utf-8", "replace")}) + "\n")
            results.flush()


if __name__ == "__main__":
    _drive(*sys.argv[1:4])
