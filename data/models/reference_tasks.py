#!/usr/bin/python3
"""Reference task lists of the model zoo, from ONNX's own shape inference (maintainer-only).

Usage:  python3 data/models/reference_tasks.py [DIR] [NAME ...]
        python3 data/models/reference_tasks.py --compare [DIR]

For every DIR/NAME.onnx (DIR defaults to this script's folder) write DIR/NAME.tasks.tsv:
the tuning tasks of the graph as tunekit names them, in the data/networks TSV format
(header "weight<TAB>task", one line per distinct task, weight = occurrences, lines in
order of first occurrence; a "# NODE (OP)" comment above each line names the first
ONNX node the task came from).  --compare checks the hand-written
data/networks/NAME.tsv against DIR/NAME.tasks.tsv for every NAME both have, and
prints the differences (exit 1 if any).

Shapes: onnx.shape_inference.infer_shapes (strict, data_prop=True) on the graph.
Where torch exported shape arithmetic (Shape -> Gather -> Add/Div/Mul -> Slice for
Tensor.chunk in ShuffleNet-V2 and nn.MultiheadAttention; Shape -> Slice -> Concat ->
Resize for DeepLabV3's F.interpolate(size=...)) ONNX 1.12's inference, even with
data_prop, leaves the results without a shape; this script then evaluates those small integer
tensors itself (only nodes whose inputs are Constants or Shapes of tensors ONNX has
already shaped, only integer results), puts them in the graph as Constants, and runs
infer_shapes again until nothing changes.  Every tensor shape still comes from ONNX's
inference; a task whose shapes are not all known stops the script.

Tasks (syntax: tunekit's task grammar, parameters sorted by name, optional parameters
omitted at their defaults):
  Conv           2-D: depthwise_conv2d when group == C_in == C_out, else conv2d
                 1-D: conv1d
  ConvTranspose  2-D: conv2d_transpose; 1-D: conv1d_transpose
  Gemm           dense (transA/transB taken into account)
  MatMul         B 2-D: dense, m = product of A's leading dimensions;
                 else batch_matmul, b = product of the broadcast batch dimensions
  dense_relu     a dense Gemm/MatMul (plus, for MatMul, one Add of a 1-D parameter
                 bias) whose only consumer is a Relu
"""
import math
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper, helper, TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))


class Fail(Exception):
    pass


# ------------------------------------------------ shape arithmetic folding --
INT_TYPES = (np.int64, np.int32, np.int16, np.int8, np.uint8, np.uint16, np.uint32,
             np.uint64)


def attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def eval_node(node, vals, shapes):
    """The value of a shape-arithmetic node, or None if not evaluable here."""
    op = node.op_type
    ins = list(node.input)
    if op == "Shape":
        s = shapes.get(ins[0])
        if s is None:
            return None
        return np.array(s, dtype=np.int64)
    if any(i and i not in vals for i in ins):
        return None
    v = [vals[i] if i else None for i in ins]
    if op == "Gather":
        return np.take(v[0], v[1], axis=attr(node, "axis", 0))
    if op in ("Add", "Sub", "Mul"):
        f = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}[op]
        return f(v[0], v[1])
    if op == "Div":
        if v[0].dtype.type not in INT_TYPES:
            return None
        q = np.abs(v[0]) // np.abs(v[1])  # ONNX integer Div truncates toward zero
        return (q * np.sign(v[0]) * np.sign(v[1])).astype(v[0].dtype)
    if op == "Concat":
        return np.concatenate(v, axis=attr(node, "axis"))
    if op == "Unsqueeze":
        out = v[0]
        axes = sorted(int(a) % (out.ndim + len(v[1])) for a in v[1])
        for a in axes:
            out = np.expand_dims(out, a)
        return out
    if op == "Squeeze":
        axes = tuple(int(a) % v[0].ndim for a in v[1]) if len(v) > 1 else None
        return np.squeeze(v[0], axis=axes)
    if op == "Cast":
        to = attr(node, "to")
        if to not in (TensorProto.INT64, TensorProto.INT32):
            return None
        return v[0].astype(helper.tensor_dtype_to_np_dtype(to))
    if op == "Slice":
        data, starts, ends = v[0], v[1], v[2]
        axes = v[3] if len(v) > 3 and v[3] is not None else range(len(starts))
        steps = v[4] if len(v) > 4 and v[4] is not None else [1] * len(starts)
        sl = [slice(None)] * data.ndim
        for s, e, a, st in zip(starts, ends, axes, steps):
            sl[int(a)] = slice(int(s), int(e), int(st))
        return data[tuple(sl)]
    return None


def fold_shape_arithmetic(model):
    """Replace evaluable integer shape-arithmetic nodes by Constants (see the docstring)."""
    folded = 0
    graph = model.graph
    vals = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for n in graph.node:
        if n.op_type == "Constant" and attr(n, "value") is not None:
            vals[n.output[0]] = numpy_helper.to_array(attr(n, "value"))
    for _ in range(1000):
        inf = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
        shapes = known_shapes(inf)
        changed = False
        for idx, n in enumerate(graph.node):
            if n.op_type == "Constant" or n.output[0] in vals:
                continue
            if n.op_type not in ("Shape", "Gather", "Add", "Sub", "Mul", "Div", "Concat",
                                 "Unsqueeze", "Squeeze", "Cast", "Slice"):
                continue
            if n.op_type != "Shape" and any(
                    i in vals and vals[i].dtype.type not in INT_TYPES for i in n.input if i):
                continue
            r = eval_node(n, vals, shapes)
            if r is None or r.dtype.type not in INT_TYPES or r.size > 64:
                continue
            r = np.asarray(r)
            vals[n.output[0]] = r
            c = helper.make_node("Constant", [], [n.output[0]], name=n.name,
                                 value=numpy_helper.from_array(r, n.output[0]))
            graph.node.remove(n)
            graph.node.insert(idx, c)
            folded += 1
            changed = True
        if not changed:
            return inf, folded
    raise Fail("shape arithmetic does not settle")


def known_shapes(model):
    shapes = {}
    for v in list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output):
        t = v.type.tensor_type
        if not t.HasField("shape"):
            continue
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        if all(d is not None for d in dims):
            shapes[v.name] = dims
    for t in model.graph.initializer:
        shapes[t.name] = list(t.dims)
    return shapes


# ---------------------------------------------------------------- tasks -----
def key(op, params, defaults):
    """Canonical task string: optional params dropped when at their default."""
    kept = {}
    for k, v in params.items():
        if k in defaults:
            d = defaults[k]
            d = params[d] if isinstance(d, str) else d
            if v == d:
                continue
        kept[k] = v
    return op + ":" + ",".join("%s=%d" % (k, kept[k]) for k in sorted(kept))


def conv_pads(node, spatial, kernel, strides, dils, transpose=False, out_pad=None):
    nd = len(spatial)
    auto = attr(node, "auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if attr(node, "output_shape") is not None:
        raise Fail("%s: ConvTranspose output_shape is not handled" % node.name)
    if auto in ("NOTSET", ""):
        pads = list(attr(node, "pads", [0] * (2 * nd)))
        return pads[:nd], pads[nd:]
    if auto == "VALID":
        return [0] * nd, [0] * nd
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise Fail("%s: auto_pad %s" % (node.name, auto))
    begin, end = [], []
    for i in range(nd):
        ek = (kernel[i] - 1) * dils[i] + 1
        if transpose:
            out = spatial[i] * strides[i]
            total = max(0, strides[i] * (spatial[i] - 1) + out_pad[i] + ek - out)
        else:
            out = -(-spatial[i] // strides[i])
            total = max(0, (out - 1) * strides[i] + ek - spatial[i])
        small, big = total // 2, total - total // 2
        if auto == "SAME_UPPER":
            begin.append(small)
            end.append(big)
        else:
            begin.append(big)
            end.append(small)
    return begin, end


def conv_task(node, shape):
    x, w = shape(node.input[0]), shape(node.input[1])
    nd = len(x) - 2
    transpose = node.op_type == "ConvTranspose"
    g = attr(node, "group", 1)
    kernel = list(attr(node, "kernel_shape", w[2:]))
    if kernel != w[2:]:
        raise Fail("%s: kernel_shape %s differs from the weight's %s" % (node.name, kernel, w))
    strides = list(attr(node, "strides", [1] * nd))
    dils = list(attr(node, "dilations", [1] * nd))
    out_pad = list(attr(node, "output_padding", [0] * nd)) if transpose else None
    pb, pe = conv_pads(node, x[2:], kernel, strides, dils, transpose, out_pad)
    n, c = x[0], x[1]
    k = w[1] * g if transpose else w[0]
    if nd == 2:
        p = dict(n=n, c=c, h=x[2], w=x[3], r=kernel[0], s=kernel[1],
                 stride=strides[0], stride_w=strides[1],
                 dilation=dils[0], dilation_w=dils[1],
                 pad=pb[0], pad_l=pb[1], pad_b=pe[0], pad_r=pe[1])
        opt = dict(stride_w="stride", dilation=1, dilation_w="dilation",
                   pad_l="pad", pad_b="pad", pad_r="pad_l")
        if transpose:
            p.update(k=k, groups=g, out_pad=out_pad[0], out_pad_w=out_pad[1])
            opt.update(groups=1, out_pad=0, out_pad_w="out_pad")
            op = "conv2d_transpose"
        elif g == c == k:
            op = "depthwise_conv2d"
        else:
            p.update(k=k, groups=g)
            opt.update(groups=1)
            op = "conv2d"
    elif nd == 1:
        p = dict(n=n, c=c, w=x[2], k=k, r=kernel[0], stride=strides[0], pad=pb[0],
                 groups=g, dilation=dils[0], pad_r=pe[0])
        opt = dict(groups=1, dilation=1, pad_r="pad")
        op = "conv1d"
        if transpose:
            p.update(out_pad=out_pad[0])
            opt.update(out_pad=0)
            op = "conv1d_transpose"
    else:
        raise Fail("%s: %s on %d-D input is not a task tunekit has" % (node.name, node.op_type, nd))
    # the task's output size must be the one ONNX inferred for the node
    want = shape(node.output[0])[2:]
    if op == "conv1d" or op == "conv1d_transpose":
        sides = [(p["w"], p["r"], p["stride"], p["dilation"], p["pad"], p["pad_r"],
                  p.get("out_pad", 0))]
    else:
        sides = [(p["h"], p["r"], p["stride"], p["dilation"], p["pad"], p["pad_b"],
                  p.get("out_pad", 0)),
                 (p["w"], p["s"], p["stride_w"], p["dilation_w"], p["pad_l"], p["pad_r"],
                  p.get("out_pad_w", 0))]
    got = []
    for i, r, st, d, pa, pb_, op_ in sides:
        if transpose:
            got.append((i - 1) * st - pa - pb_ + d * (r - 1) + 1 + op_)
        else:
            got.append((i + pa + pb_ - d * (r - 1) - 1) // st + 1)
    if got != want:
        raise Fail("%s: task %s gives output %s, ONNX inferred %s"
                   % (node.name, key(op, p, opt), got, want))
    return key(op, p, opt), p, op


def matmul_task(node, shape):
    if node.op_type == "Gemm":
        a, b = shape(node.input[0]), shape(node.input[1])
        if attr(node, "transA", 0):
            a = a[::-1]
        if attr(node, "transB", 0):
            b = b[::-1]
        return "dense", dict(m=a[0], k=a[1], n=b[1])
    a, b = shape(node.input[0]), shape(node.input[1])
    if len(a) == 1:
        a = [1] + a
    if len(b) == 1:
        b = b + [1]
    if a[-1] != b[-2]:
        raise Fail("%s: MatMul %s x %s" % (node.name, a, b))
    if len(b) == 2:
        return "dense", dict(m=math.prod(a[:-1]), k=a[-1], n=b[-1])
    ba, bb = a[:-2], b[:-2]
    nb = max(len(ba), len(bb))
    ba, bb = [1] * (nb - len(ba)) + ba, [1] * (nb - len(bb)) + bb
    batch = [max(i, j) for i, j in zip(ba, bb)]
    return "batch_matmul", dict(b=math.prod(batch), m=a[-2], k=a[-1], n=b[-1])


def flops(op, p):
    if op == "dense" or op == "dense_relu":
        return 2 * p["m"] * p["n"] * p["k"]
    if op == "batch_matmul":
        return 2 * p["b"] * p["m"] * p["n"] * p["k"]
    if op.endswith("transpose"):  # every input pixel meets k/groups x kernel weights
        sp = p["h"] * p["w"] * p["s"] if "h" in p else p["w"]
        return 2 * p["n"] * p["c"] * sp * p["r"] * (p["k"] // p["groups"])
    if op == "conv1d":
        ow = (p["w"] + p["pad"] + p["pad_r"] - p["dilation"] * (p["r"] - 1) - 1) // p["stride"] + 1
        return 2 * p["n"] * p["k"] * ow * (p["c"] // p["groups"]) * p["r"]
    oh = (p["h"] + p["pad"] + p["pad_b"] - p["dilation"] * (p["r"] - 1) - 1) // p["stride"] + 1
    ow = (p["w"] + p["pad_l"] + p["pad_r"] - p["dilation_w"] * (p["s"] - 1) - 1) // p["stride_w"] + 1
    if op == "depthwise_conv2d":
        return 2 * p["n"] * p["c"] * oh * ow * p["r"] * p["s"]
    return 2 * p["n"] * p["k"] * oh * ow * (p["c"] // p["groups"]) * p["r"] * p["s"]


def extract(path):
    model = onnx.load(path)
    onnx.checker.check_model(model)
    inf, folded = fold_shape_arithmetic(model)
    shapes = known_shapes(inf)
    g = inf.graph

    def shape(name):
        if name not in shapes:
            raise Fail("%s: tensor %s has no static shape from ONNX shape inference"
                       % (path, name))
        return shapes[name]

    consumers = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    outputs = {o.name for o in g.output}
    data_inputs = {g.input[0].name}
    params = ({i.name for i in g.input} | {t.name for t in g.initializer}) - data_inputs
    const = {n.output[0] for n in g.node if n.op_type == "Constant"}

    def only_consumer(name):
        c = consumers.get(name, [])
        return c[0] if len(c) == 1 and name not in outputs else None

    def relu_follows(out, mm_shape):
        nxt = only_consumer(out)
        if nxt is not None and nxt.op_type == "Add":
            other = [i for i in nxt.input if i != out]
            if (len(other) == 1 and (other[0] in params or other[0] in const)
                    and len(shape(other[0])) == 1 and shape(nxt.output[0]) == mm_shape):
                nxt = only_consumer(nxt.output[0])
            else:
                nxt = None
        return nxt is not None and nxt.op_type == "Relu"

    tasks = {}   # key -> [weight, first node, op, params]
    for n in g.node:
        if n.op_type in ("Conv", "ConvTranspose"):
            k, p, op = conv_task(n, shape)
        elif n.op_type in ("Gemm", "MatMul"):
            op, p = matmul_task(n, shape)
            if op == "dense" and relu_follows(n.output[0], shape(n.output[0])):
                op = "dense_relu"
            k = key(op, p, {})
        else:
            continue
        if k in tasks:
            tasks[k][0] += 1
        else:
            tasks[k] = [1, n, op, p]
    inp = g.input[0]
    return tasks, folded, (inp.name, shape(inp.name))


def write_tsv(name, path, out):
    tasks, folded, (iname, ishape) = extract(path)
    total = sum(t[0] for t in tasks.values())
    gflop = sum(t[0] * flops(t[2], t[3]) for t in tasks.values()) / 1e9
    lines = [
        "# %s: the tuning tasks of %s.onnx by ONNX's own shape inference" % (name, name),
        "# (onnx %s, onnx.shape_inference.infer_shapes); written by data/models/reference_tasks.py,"
        % onnx.__version__,
        "# do not edit. Input %s %s. Tasks from Conv, ConvTranspose, Gemm, MatMul; every other"
        % (iname, "x".join(map(str, ishape))),
        "# node is followed for shapes only. %d distinct tasks, total weight %d, %.3f GFLOP."
        % (len(tasks), total, gflop),
    ]
    if folded:
        lines.append("# %d integer shape-arithmetic nodes (Shape/Gather/Div/...) evaluated as Constants"
                     % folded)
        lines.append("# before shape inference: ONNX %s's inference does not propagate their values."
                     % onnx.__version__)
    lines.append("# Above each task: the first ONNX node (and its op) it comes from.")
    lines.append("weight\ttask")
    for k, (w, node, _, _) in tasks.items():
        lines.append("# %s (%s)" % (node.name, node.op_type))
        lines.append("%d\t%s" % (w, k))
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    return len(tasks), total, gflop


def read_tsv(path):
    out = {}
    with open(path) as f:
        header = False
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            w, t = line.split("\t")
            if not header:
                header = True
                continue
            op, _, rest = t.partition(":")
            kv = dict(x.split("=") for x in rest.split(","))
            canon = op + ":" + ",".join("%s=%s" % (k, kv[k]) for k in sorted(kv))
            out[canon] = out.get(canon, 0) + int(w)
    return out


def compare(mdir):
    ndir = os.path.join(HERE, "..", "networks")
    bad = 0
    for f in sorted(os.listdir(mdir)):
        if not f.endswith(".tasks.tsv"):
            continue
        name = f[:-len(".tasks.tsv")]
        hand = os.path.join(ndir, name + ".tsv")
        if not os.path.exists(hand):
            continue
        h, r = read_tsv(hand), read_tsv(os.path.join(mdir, f))
        if h == r:
            print("%-22s same %d tasks, total weight %d" % (name, len(h), sum(h.values())))
            continue
        bad += 1
        print("%-22s DIFFERS" % name)
        for k in list(h) + [k for k in r if k not in h]:
            if h.get(k) != r.get(k):
                print("    hand %3s  onnx %3s  %s" % (h.get(k, "-"), r.get(k, "-"), k))
    return 1 if bad else 0


def main(argv):
    args = argv[1:]
    if args and args[0] == "--compare":
        return compare(args[1] if len(args) > 1 else HERE)
    mdir = args[0] if args else HERE
    only = set(args[1:])
    failed = 0
    for f in sorted(os.listdir(mdir)):
        if not f.endswith(".onnx"):
            continue
        name = f[:-5]
        if only and name not in only:
            continue
        try:
            n, w, gf = write_tsv(name, os.path.join(mdir, f),
                                 os.path.join(mdir, name + ".tasks.tsv"))
        except Fail as e:
            failed += 1
            print("%-22s FAILED: %s" % (name, e))
            continue
        print("%-22s %3d tasks  weight %5d  %9.3f GFLOP" % (name, n, w, gf))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
