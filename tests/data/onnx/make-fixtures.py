#!/usr/bin/python3
# The small ONNX models of tests/t0130-onnx.sh and the seeds of the onnx fuzz
# harness, made with Debian's python3-onnx (1.12). Run by a maintainer when
# a fixture changes (`/usr/bin/python3 tests/data/onnx/make-fixtures.py` from
# the top); the tests read the committed files and need no Python.
import os

import onnx
from onnx import TensorProto, helper, numpy_helper
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))


def save(model, name):
    onnx.save(model, os.path.join(here, name))


def vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def model(nodes, inputs, outputs, inits=(), opset=13, check=True):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="tunekit-fixtures")
    m.ir_version = 7
    if check:
        onnx.checker.check_model(m)
    return m


# A small CNN with a symbolic batch: Conv+BN+Relu, MaxPool, a 1x7/7x1 pair
# with per-side padding left out (plain convolutions only), a second Conv of
# the same shape (weight 2), GlobalAveragePool, Flatten, Gemm+Relu
# (dense_relu), Gemm (dense). Weights are initializers, their values zero.
def tiny_cnn(batch="N"):
    f = np.float32
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c1", "g", "be", "mu", "var"], ["bn1"], name="bn1"),
        helper.make_node("Relu", ["bn1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[3, 3],
                         strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], name="conv2", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Conv", ["r2", "w3"], ["c3"], name="conv3", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c3", "p1"], ["s3"], name="residual"),
        helper.make_node("GlobalAveragePool", ["s3"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fw1", "fb1"], ["fc1"], name="fc1", transB=1),
        helper.make_node("Relu", ["fc1"], ["fr1"], name="fc1_relu"),
        helper.make_node("Gemm", ["fr1", "fw2", "fb2"], ["y"], name="fc2", transB=1),
    ]
    inits = [
        init("w1", np.zeros((16, 3, 3, 3), f)), init("b1", np.zeros(16, f)),
        init("g", np.ones(16, f)), init("be", np.zeros(16, f)),
        init("mu", np.zeros(16, f)), init("var", np.ones(16, f)),
        init("w2", np.zeros((16, 16, 3, 3), f)), init("w3", np.zeros((16, 16, 3, 3), f)),
        init("fw1", np.zeros((32, 16), f)), init("fb1", np.zeros(32, f)),
        init("fw2", np.zeros((10, 32), f)), init("fb2", np.zeros(10, f)),
    ]
    return model(nodes, [vi("x", [batch, 3, 32, 32])], [vi("y", [batch, 10])], inits)


# Shape arithmetic as exporters write it: Shape -> Gather -> Unsqueeze ->
# Concat -> Reshape, then a MatMul against a 2-d weight (dense with m the
# product of the leading dims) and a batched MatMul (batch_matmul).
def shape_chain(opset):
    if opset >= 13:
        unsq = [helper.make_node("Unsqueeze", ["b0", "ax0"], ["b1"], name="unsq")]
        extra = [init("ax0", np.array([0], np.int64))]
    else:
        unsq = [helper.make_node("Unsqueeze", ["b0"], ["b1"], name="unsq", axes=[0])]
        extra = []
    nodes = [
        helper.make_node("Shape", ["x"], ["sh"], name="shape"),
        helper.make_node("Gather", ["sh", "i0"], ["b0"], name="gather", axis=0),
    ] + unsq + [
        helper.make_node("Concat", ["b1", "tail"], ["newshape"], name="concat", axis=0),
        helper.make_node("Reshape", ["x", "newshape"], ["x3"], name="reshape"),
        helper.make_node("MatMul", ["x3", "w"], ["h"], name="proj"),
        helper.make_node("Transpose", ["h"], ["ht"], name="tr", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["h", "ht"], ["y"], name="scores"),
    ]
    inits = [init("i0", np.array(0, np.int64)), init("tail", np.array([-1, 64], np.int64)),
             init("w", np.zeros((64, 32), np.float32))] + extra
    return model(nodes, [vi("x", [2, 16, 8, 8])], [vi("y", [2, 16, 16])], inits, opset=opset)


# Nodes listed out of order (the spec wants them sorted; not every tool
# writes them so): imported in dependency order all the same.
def unsorted():
    nodes = [helper.make_node("MatMul", ["h", "w2"], ["y"], name="second"),
             helper.make_node("Relu", ["m"], ["h"], name="relu"),
             helper.make_node("MatMul", ["x", "w1"], ["m"], name="first")]
    return model(nodes, [vi("x", [2, 8]), vi("w1", [8, 16]), vi("w2", [16, 4])],
                 [vi("y", [2, 4])], check=False)


# Constant arithmetic at the ends of int64 (wraps, never undefined), a
# Slice with the most negative step, then a Range of 2^64 elements: refused.
def overflow():
    big, small = (1 << 63) - 1, -(1 << 63)
    nodes = [
        helper.make_node("Constant", [], ["c1"], name="c1", value_ints=[big, small, -1]),
        helper.make_node("Constant", [], ["c2"], name="c2", value_ints=[1, -1, small]),
        helper.make_node("Add", ["c1", "c2"], ["s"], name="add"),
        helper.make_node("Mul", ["c1", "c1"], ["m"], name="mul"),
        helper.make_node("Div", ["c2", "c1"], ["q"], name="div"),
        helper.make_node("Mod", ["c1", "c2"], ["r"], name="mod"),
        helper.make_node("Neg", ["c2"], ["ng"], name="neg"),
        helper.make_node("Abs", ["c2"], ["ab"], name="abs"),
        helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["xs"], name="slice"),
        helper.make_node("MatMul", ["xs", "w"], ["y"], name="mm"),
        helper.make_node("Range", ["lo", "hi", "one"], ["rg"], name="range"),
    ]
    inits = [init("st", np.array([-1], np.int64)), init("en", np.array([small], np.int64)),
             init("ax", np.array([0], np.int64)), init("sp", np.array([small], np.int64)),
             init("w", np.zeros((8, 4), np.float32)),
             init("lo", np.array(small, np.int64)), init("hi", np.array(big, np.int64)),
             init("one", np.array(1, np.int64))]
    return model(nodes, [vi("x", [4, 8])], [vi("y", [1, 4]), vi("rg", [None], TensorProto.INT64)],
                 inits, check=False)


# A Reshape whose shape is a Constant with its int64_data not packed (as
# proto2 writes a repeated field by default, and protobuf readers must
# take): the packed bytes 3a 02 04 04 become 38 04 38 04, the same length.
def unpacked():
    nodes = [helper.make_node("Constant", [], ["shape"], name="shape",
                              value=helper.make_tensor("s", TensorProto.INT64, [2], [4, 4])),
             helper.make_node("Reshape", ["x", "shape"], ["x4"], name="reshape"),
             helper.make_node("MatMul", ["x4", "w"], ["y"], name="mm")]
    m = model(nodes, [vi("x", [2, 8]), vi("w", [4, 4])], [vi("y", [4, 4])])
    b = m.SerializeToString()
    assert b.count(b"\x3a\x02\x04\x04") == 1
    return b.replace(b"\x3a\x02\x04\x04", b"\x38\x04\x38\x04")


def symbolic():
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
    return model(nodes, [vi("x", ["batch", 8]), vi("w", [8, 4])], [vi("y", ["batch", 4])])


def unknown_op():
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("FrobnicateTensor", ["h"], ["y"], name="mystery")]
    return model(nodes, [vi("x", [2, 8]), vi("w", [8, 4])], [vi("y", [2, 4])], check=False)


def cyclic():
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="first"),
             helper.make_node("MatMul", ["a", "w"], ["b"], name="second")]
    return model(nodes, [vi("x", [4, 4]), vi("w", [4, 4])], [vi("b", [4, 4])], check=False)


def absurd():
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
    return model(nodes, [vi("x", [1 << 40, 8]), vi("w", [8, 4])], [vi("y", [1 << 40, 4])],
                 check=False)


def absurd_init():
    # an initializer claiming 2^62 elements (dims only, no data)
    t = TensorProto()
    t.name = "w"
    t.data_type = TensorProto.FLOAT
    t.dims.extend([1 << 31, 1 << 31])
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
    g = helper.make_graph(nodes, "g", [vi("x", [1, 1 << 31])], [vi("y", [1, 1 << 31])],
                          initializer=[t])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


# The head of a model whose last field is a weight of HUGE bytes of raw_data:
# the test appends the bytes as a hole (truncate -s), making a model of
# gigabytes that must import in little memory.
HUGE = 3 << 30


def huge_head():
    n = HUGE // 4
    t = TensorProto()
    t.name = "w"
    t.data_type = TensorProto.FLOAT
    t.dims.extend([n // 1024, 1024])
    t.raw_data = b"\0"
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
    g = helper.make_graph(nodes, "g", [vi("x", [1, n // 1024])], [vi("y", [1, 1024])],
                          initializer=[t])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    full = m.SerializeToString()
    # the same with HUGE bytes of raw data: re-encode by hand (protobuf will
    # not build it in memory for us without the memory)
    def varint(x):
        out = b""
        while True:
            b = x & 0x7f
            x >>= 7
            if x:
                out += bytes([b | 0x80])
            else:
                return out + bytes([b])
    tensor_head = t.SerializeToString()[:-3]  # without raw_data (tag 0x4a, len 1, byte)
    assert t.SerializeToString()[-3:] == b"\x4a\x01\x00"
    tensor = tensor_head + b"\x4a" + varint(HUGE)
    tensor_len = len(tensor) + HUGE
    g2 = helper.make_graph(nodes, "g", [vi("x", [1, n // 1024])], [vi("y", [1, 1024])])
    graph_head = g2.SerializeToString() + b"\x2a" + varint(tensor_len)  # initializer = 5
    graph_len = len(graph_head) + len(tensor) + HUGE
    m2 = helper.make_model(helper.make_graph([], "x", [], []),
                           opset_imports=[helper.make_opsetid("", 13)])
    m2.ClearField("graph")
    head = m2.SerializeToString() + b"\x3a" + varint(graph_len) + graph_head + tensor
    del full
    return head, len(head) + HUGE


save(tiny_cnn(), "tiny-cnn.onnx")
# batch 1, for --network (no --input there): tests/t0140-layout.sh
save(tiny_cnn(1), "tiny-cnn-1.onnx")
save(shape_chain(11), "shape-chain-11.onnx")
save(shape_chain(13), "shape-chain-13.onnx")
save(symbolic(), "symbolic.onnx")
save(unsorted(), "unsorted.onnx")
save(overflow(), "overflow.onnx")
with open(os.path.join(here, "unpacked.onnx"), "wb") as f:
    f.write(unpacked())
save(unknown_op(), "unknown-op.onnx")
save(cyclic(), "cyclic.onnx")
save(absurd(), "absurd.onnx")
save(absurd_init(), "absurd-init.onnx")
head, size = huge_head()
with open(os.path.join(here, "huge-head.bin"), "wb") as f:
    f.write(head)
with open(os.path.join(here, "huge-size.txt"), "w") as f:
    f.write("%d\n" % size)
