#!/usr/bin/python3
"""Export the model zoo: ONNX graphs without weights (maintainer-only).

Usage:  python3 data/models/export.py [OUTDIR] [NAME ...]
        python3 data/models/export.py --verify [DIR] [NAME ...]

OUTDIR defaults to the folder of this script (data/models); NAMEs restrict the
export to those models (default: all of them).  Then run reference_tasks.py to
write the NAME.tasks.tsv files.

--verify checks DIR/NAME.tasks.tsv (from the ONNX graph) against what PyTorch itself
computes: it runs each model once with hooks that record the input shape of every
Conv2d and every linear/matmul/bmm call and compares the tasks they make (weights
included; dense_relu counts as dense, since a hook does not see the Relu after it).

Run with Debian 12's python3-torch 1.13 / python3-torchvision 0.14 and
python3-onnx (the interpreter /usr/bin/python3).  Neither the build nor the tests
run this script; the .onnx files it writes are committed.

How each graph is exported (see README.md):
  * torchvision models are built with weights=None (nothing is downloaded), then
    every floating-point parameter and buffer is set to a distinct pseudo-random
    value from a fixed seed.  No value reaches the file (export_params=False);
    this only keeps the exporter from merging parameters that happen to be equal
    (a freshly initialised BatchNorm's running mean/var are all identical and
    would otherwise be deduplicated into Identity nodes).
  * the model is in eval() mode and exported with training=TrainingMode.PRESERVE,
    so BatchNormalization stays a node of its own (the default, EVAL, folds it
    into the preceding Conv and names the folded weights onnx::Conv_NNN) and
    Dropout disappears, as in inference.
  * opset 13, batch 1, NCHW, do_constant_folding=True (torch's default: it folds
    the transposes of nn.Linear weights, which then appear as graph inputs named
    onnx::MatMul_NNN of shape [in, out]), no dynamic axes.  Every input shape is
    static; where torch still exports shape arithmetic (Tensor.chunk in
    ShuffleNet-V2 and nn.MultiheadAttention, F.interpolate in DeepLabV3) see
    reference_tasks.py.
  * each file passes onnx.checker.check_model and
    onnx.shape_inference.infer_shapes(strict_mode=True).
  * with export_params=False the parameters are graph inputs (named as in the
    module's state_dict, e.g. "layer1.0.conv1.weight") carrying their shapes,
    and the file holds the graph alone.
"""
import hashlib
import math
import os
import sys
import warnings

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
import torchvision.models as tvm
import torchvision.models.segmentation as tvs

OPSET = 13
SEED = 0


# ---------------------------------------------------------------- BERT -----
# A BERT encoder written after HuggingFace transformers' BertModel (modeling_bert.py):
# the same modules in the same order, computing the same matmuls.  Embeddings are
# INCLUDED (word + position + token-type lookups, their sum and a LayerNorm), so the
# graph takes token ids as HuggingFace's does; they are Gathers, not tuning tasks.
# There is no attention-mask input: at batch 1 without padding BertModel's default
# all-ones mask adds 0 to every score.  Dropout is absent in eval mode.  GELU is the
# exact (erf) one, as BERT's "gelu".  The pooler takes the [CLS] token (position 0).

class BertSelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.head_size = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def split(self, x):                      # [B,S,H] -> [B,heads,S,head_size]
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, x):
        q = self.split(self.query(x))
        k = self.split(self.key(x))
        v = self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
        probs = F.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        b, s = ctx.shape[0], ctx.shape[1]
        return ctx.view(b, s, self.heads * self.head_size)


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, inter, eps):
        super().__init__()
        self.attention = BertSelfAttention(hidden, heads)
        self.attention_output = nn.Linear(hidden, hidden)
        self.attention_norm = nn.LayerNorm(hidden, eps=eps)
        self.intermediate = nn.Linear(hidden, inter)
        self.output = nn.Linear(inter, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x):
        a = self.attention_norm(self.attention_output(self.attention(x)) + x)
        h = F.gelu(self.intermediate(a))
        return self.output_norm(self.output(h) + a)


class Bert(nn.Module):
    def __init__(self, layers, hidden, heads, inter, vocab=30522, max_pos=512,
                 types=2, eps=1e-12):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(max_pos, hidden)
        self.token_type_embeddings = nn.Embedding(types, hidden)
        self.embeddings_norm = nn.LayerNorm(hidden, eps=eps)
        self.layer = nn.ModuleList(BertLayer(hidden, heads, inter, eps)
                                   for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)

    def forward(self, input_ids):
        s = input_ids.shape[1]
        pos = torch.arange(s, dtype=torch.long).unsqueeze(0)
        typ = torch.zeros_like(input_ids)
        x = (self.word_embeddings(input_ids) + self.position_embeddings(pos)
             + self.token_type_embeddings(typ))
        x = self.embeddings_norm(x)
        for layer in self.layer:
            x = layer(x)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return x, pooled


# (layers, hidden, heads, intermediate) of the data/networks/bert-*.tsv networks
BERTS = {
    "bert-tiny": (2, 128, 2, 512),      # google/bert_uncased_L-2_H-128_A-2
    "bert-medium": (8, 512, 8, 2048),   # google/bert_uncased_L-8_H-512_A-8
    "bert-base": (12, 768, 12, 3072),   # bert-base-uncased
    "bert-large": (24, 1024, 16, 4096), # bert-large-uncased
}


class TransformerEncoder(nn.Module):
    """torch.nn.TransformerEncoder (post-norm, ReLU FFN, batch_first) as users build it."""

    def __init__(self, layers, d_model, heads, ff):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.1,
                                           activation="relu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, x):
        return self.encoder(x)


class SegmentationOut(nn.Module):
    """torchvision segmentation models return a dict; export its "out" tensor."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


# name -> (constructor, (input name, example input), output names)
def models():
    tv = {
        # the networks data/networks/*.tsv hand-derive (see data/networks/README.md)
        "resnet-18": (lambda: tvm.resnet18(weights=None), 224),
        "resnet-18-240": (lambda: tvm.resnet18(weights=None), 240),
        "resnet-18-256": (lambda: tvm.resnet18(weights=None), 256),
        "resnet-50": (lambda: tvm.resnet50(weights=None), 224),
        "wide-resnet-50-2": (lambda: tvm.wide_resnet50_2(weights=None), 224),
        "vgg-16": (lambda: tvm.vgg16(weights=None), 224),
        "alexnet": (lambda: tvm.alexnet(weights=None), 224),
        "squeezenet-1.0": (lambda: tvm.squeezenet1_0(weights=None), 224),
        "mobilenet-v2": (lambda: tvm.mobilenet_v2(weights=None), 224),
        # the others issue 52 names: grouped, dilated, 1x7/7x1, 7x7 depthwise, ...
        "resnext-50-32x4d": (lambda: tvm.resnext50_32x4d(weights=None), 224),
        "regnet-y-400mf": (lambda: tvm.regnet_y_400mf(weights=None), 224),
        "efficientnet-b0": (lambda: tvm.efficientnet_b0(weights=None), 224),
        "mobilenet-v3-large": (lambda: tvm.mobilenet_v3_large(weights=None), 224),
        "convnext-tiny": (lambda: tvm.convnext_tiny(weights=None), 224),
        "inception-v3": (lambda: tvm.inception_v3(weights=None, init_weights=False), 299),
        "googlenet": (lambda: tvm.googlenet(weights=None, init_weights=False), 224),
        "densenet-121": (lambda: tvm.densenet121(weights=None), 224),
        "shufflenet-v2-x1.0": (lambda: tvm.shufflenet_v2_x1_0(weights=None), 224),
        "deeplabv3-resnet50": (lambda: SegmentationOut(tvs.deeplabv3_resnet50(
            weights=None, weights_backbone=None)), 520),
    }
    out = {}
    for name, (ctor, n) in tv.items():
        out[name] = (ctor, ("input", torch.zeros(1, 3, n, n)), ["output"])
    for name, cfg in BERTS.items():
        for seq in (64, 128, 256):
            key = name if seq == 128 else "%s-%d" % (name, seq)
            out[key] = ((lambda cfg=cfg: Bert(*cfg)),
                        ("input_ids", torch.zeros(1, seq, dtype=torch.long)),
                        ["last_hidden_state", "pooler_output"])
    # torch.nn.TransformerEncoder as the Transformer paper's base encoder
    # (6 layers, d_model 512, 8 heads, FFN 2048), 128 tokens
    out["transformer-encoder"] = ((lambda: TransformerEncoder(6, 512, 8, 2048)),
                                  ("x", torch.zeros(1, 128, 512)), ["output"])
    return out


def randomize(model):
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for t in model.state_dict().values():
            if t.is_floating_point():
                t.copy_(torch.rand(t.shape, generator=g) + 0.5)
    return model


def export(name, ctor, inp, outputs, outdir):
    torch.manual_seed(SEED)
    model = randomize(ctor()).eval()
    iname, x = inp
    path = os.path.join(outdir, name + ".onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # not under torch.no_grad(): nn.TransformerEncoderLayer would take its
        # fused fast path, which has no ONNX export
        torch.onnx.export(model, (x,), path, export_params=False,
                          opset_version=OPSET, do_constant_folding=True,
                          training=torch.onnx.TrainingMode.PRESERVE,
                          input_names=[iname], output_names=outputs)
    m = onnx.load(path)
    onnx.checker.check_model(m)
    inferred = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
    known = {v.name for v in list(inferred.graph.value_info) + list(inferred.graph.input)
             + list(inferred.graph.output)}
    missing = [o for n in inferred.graph.node for o in n.output if o and o not in known]
    if missing:
        raise RuntimeError("%s: shape inference left %d tensors without a type, first %s"
                           % (name, len(missing), missing[0]))
    with open(path, "rb") as f:
        data = f.read()
    return len(data), hashlib.sha256(data).hexdigest()[:16], len(m.graph.node)


def verify(mdir, only):
    """Compare the ONNX-derived task lists with the shapes PyTorch runs (see the docstring)."""
    import collections
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import reference_tasks as R

    bad = 0
    for name, (ctor, inp, _) in models().items():
        if only and name not in only:
            continue
        path = os.path.join(mdir, name + ".tasks.tsv")
        if not os.path.exists(path):
            continue
        got = collections.Counter()

        def conv_hook(mod, args, out):
            s = list(args[0].shape)
            if isinstance(mod.padding, str) or len(s) != 4:
                raise RuntimeError("%s: padding %r on %s" % (name, mod.padding, s))
            p = dict(n=s[0], c=s[1], h=s[2], w=s[3], r=mod.kernel_size[0],
                     s=mod.kernel_size[1], stride=mod.stride[0], stride_w=mod.stride[1],
                     dilation=mod.dilation[0], dilation_w=mod.dilation[1],
                     pad=mod.padding[0], pad_b=mod.padding[0], pad_l=mod.padding[1],
                     pad_r=mod.padding[1])
            opt = dict(stride_w="stride", dilation=1, dilation_w="dilation",
                       pad_l="pad", pad_b="pad", pad_r="pad_l")
            if mod.groups == s[1] == mod.out_channels:
                got[R.key("depthwise_conv2d", p, opt)] += 1
            else:
                p.update(k=mod.out_channels, groups=mod.groups)
                opt.update(groups=1)
                got[R.key("conv2d", p, opt)] += 1

        def linear(x, w, b=None):
            got[R.key("dense", dict(m=math.prod(x.shape[:-1]), k=x.shape[-1],
                                    n=w.shape[0]), {})] += 1
            return real["linear"](x, w, b)

        def matmul(a, b):
            sa, sb = list(a.shape), list(b.shape)
            if len(sb) == 2:
                got[R.key("dense", dict(m=math.prod(sa[:-1]), k=sa[-1], n=sb[1]), {})] += 1
            else:
                bd = torch.broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2]))
                got[R.key("batch_matmul", dict(b=math.prod(bd), m=sa[-2], k=sa[-1],
                                               n=sb[-1]), {})] += 1
            return real["matmul"](a, b)

        real = dict(linear=F.linear, matmul=torch.matmul, bmm=torch.bmm)
        torch.manual_seed(SEED)
        model = ctor().eval()
        for mod in model.modules():
            if isinstance(mod, nn.Conv2d):
                mod.register_forward_hook(conv_hook)
        F.linear, torch.matmul, torch.bmm = linear, matmul, matmul
        try:
            model(inp[1])  # with grad, so nn.TransformerEncoderLayer takes no fused path
        finally:
            F.linear, torch.matmul, torch.bmm = real["linear"], real["matmul"], real["bmm"]
        ref = collections.Counter()
        for k, w in R.read_tsv(path).items():
            ref[k.replace("dense_relu:", "dense:")] += w
        if ref == got:
            print("%-22s PyTorch runs the same %d tasks" % (name, len(ref)))
        else:
            bad += 1
            print("%-22s DIFFERS: only ONNX %s; only PyTorch %s"
                  % (name, dict(ref - got), dict(got - ref)))
    return 1 if bad else 0


def main(argv):
    if len(argv) > 1 and argv[1] == "--verify":
        mdir = argv[2] if len(argv) > 2 else os.path.dirname(os.path.abspath(__file__))
        torch.set_num_threads(1)
        return verify(mdir, set(argv[3:]))
    outdir = argv[1] if len(argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    only = set(argv[2:])
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    all_models = models()
    unknown = only - set(all_models)
    if unknown:
        sys.exit("export.py: unknown model(s): %s" % " ".join(sorted(unknown)))
    print("# torch %s, torchvision %s, onnx %s, opset %d"
          % (torch.__version__, torchvision.__version__, onnx.__version__, OPSET))
    failed = []
    total = 0
    for name, (ctor, inp, outputs) in all_models.items():
        if only and name not in only:
            continue
        try:
            size, digest, nodes = export(name, ctor, inp, outputs, outdir)
        except Exception as e:  # report, go on with the others
            failed.append(name)
            print("%-22s FAILED: %s: %s" % (name, type(e).__name__, e))
            continue
        total += size
        shape = "x".join(str(d) for d in inp[1].shape)
        print("%-22s %-12s %-10s %8d bytes %5d nodes sha256 %s"
              % (name, inp[0], shape, size, nodes, digest))
    print("# total %d bytes" % total)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
