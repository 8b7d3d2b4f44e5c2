/*
 * onnx: an ONNX model (.onnx) as the task list of its network.
 *
 * The reader walks the protobuf of ModelProto and GraphProto itself over
 * the mapped file, unpacks graph inputs with protobuf-c (code generated from
 * the system's onnx.proto at build time) and reads initializers (weights) by
 * hand: their name, type and dimensions, and their values only when they
 * are small integer or float tensors (ONNX_MAXVAL elements at most), so a
 * model of many gigabytes imports in the memory of its graph alone.
 *
 * Every tensor's shape is inferred node by node in topological order; small
 * tensors also carry their values (the Shape -> Gather -> Concat -> Reshape
 * chains of exported models). Conv, ConvTranspose, Gemm, MatMul and the
 * Einsum of a matrix product become tasks (conv2d, depthwise_conv2d,
 * conv2d_transpose, conv1d, conv1d_transpose, dense, dense_relu,
 * batch_matmul); every other operator
 * is followed for shapes only. An operator the reader cannot follow, or a
 * shape it cannot know, is an error naming the node: never a guessed shape.
 *
 * The result is the text of a network file (see task/network.h): '#'
 * comments, the header "weight<TAB>task", then one line per distinct task,
 * each after a comment "# node NAME (OpType)" naming the first node it came
 * from; the weight is the number of nodes with that task.
 */
#ifndef TK_ONNX_H
#define TK_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include "task/network.h"

#define ONNX_MAXDIM 8   /* dimensions of a tensor */
#define ONNX_MAXVAL 64  /* values kept of a small tensor */

/* The shape of a graph input, given on the command line (--input). */
typedef struct onnx_input {
	char name[256];
	int ndim;
	int64_t dim[ONNX_MAXDIM];
} onnx_input;

/* Parse "NAME=D1xD2x..." (the name up to the last '=', under 256 bytes;
 * up to ONNX_MAXDIM positive dimensions). TK_EINVAL with a message naming
 * arg otherwise. */
int onnx_input_parse(const char *arg, onnx_input *out);

/* The tasks of the model in buf[0, size) as network-file text into *tsv
 * (malloc'd, the caller frees). where names the model in messages and in
 * the text's first comment. in[0, nin) give the shapes of graph inputs,
 * over those of the model. Returns TK_EINVAL with a one-line message
 * "WHERE: ..." for a malformed model, an operator that cannot be followed
 * (naming the node and its type), a symbolic dimension without a value
 * (naming it), a cycle, a task tunekit cannot express; TK_ENOMEM. Nothing
 * is returned in *tsv on error. */
int onnx_read(const void *buf, size_t size, const char *where, const onnx_input *in, int nin,
              char **tsv);

/* The layouts a network's convolutions can run in. NCHW: the model's own.
 * BLOCKED: NCHW[x]c, x channels per block (16 where 16 divides the
 * channels, all of them below 16, else 8, 4, 2 or 1): every Conv that
 * conv2d_nchwc or depthwise_conv2d_nchwc expresses becomes one, blocked
 * activations flow through elementwise operators, activations, pooling,
 * spatial Pads, BatchNormalization and channel Concats whose inputs all
 * hold whole blocks, and every reorder the variant needs is a
 * layout_transform task weighted by its occurrences (to a convolution's
 * block; to NCHW for any other consumer and for graph outputs; none where
 * H*W is 1, as blocked and plain memory are then the same). */
enum { ONNX_LAYOUT_NCHW, ONNX_LAYOUT_BLOCKED };

/* onnx_read() of the variant in layout (ONNX_LAYOUT_*); the BLOCKED text
 * has a comment "# layout blocked: ..." and names each reorder's tensor,
 * blocks and consumer. Errors as onnx_read(). */
int onnx_read_layout(const void *buf, size_t size, const char *where, const onnx_input *in,
                     int nin, int layout, char **tsv);

/* The inferred shapes of the graph outputs of the model in buf[0, size),
 * one "NAME<TAB>D1xD2x..." line per output in the model's order (a scalar
 * has no dimensions), into *text (malloc'd, the caller frees): shape
 * inference alone, for the tests against ONNX's node tests. Errors as
 * onnx_read(), except that a graph without tasks is fine. */
int onnx_output_shapes(const void *buf, size_t size, const char *where, const onnx_input *in,
                       int nin, char **text);

/* onnx_read on the file at path, mapped, never read whole. TK_EIO if it
 * cannot be opened or mapped. */
int onnx_import(const char *path, const onnx_input *in, int nin, char **tsv);

/* onnx_import() of the variant in layout, as onnx_read_layout(). */
int onnx_import_layout(const char *path, const onnx_input *in, int nin, int layout, char **tsv);

/* net_load() for any network name: a path ending in ".onnx" is imported
 * (with the model's own input shapes) and parsed as a network named after
 * the file; any other name goes to net_load(). Errors as onnx_import() and
 * net_load(). Free with net_free(). */
int onnx_net_load(const char *name, tk_network **out);

/* onnx_net_load() of the variant in layout (ONNX_LAYOUT_*). Any layout but
 * NCHW needs the graph: a built-in network with convolutions has its model
 * of data/models compiled in; any other name that is no .onnx path is
 * TK_EINVAL "NAME: a layout needs the graph: ...". */
int onnx_net_load_layout(const char *name, int layout, tk_network **out);

/* A convolution as the importer writes it as a task. nsp spatial axes
 * (1 or 2); for nsp == 1 only index [1] of the per-axis arrays is used
 * (the W axis), and pad_b/pad_r... are those of that axis. */
typedef struct onnx_conv {
	int nsp;                 /* 1 or 2 */
	int transpose;           /* ConvTranspose */
	int64_t n, c, k;         /* batch, input channels, output channels */
	int64_t in[2];           /* input size: H, W */
	int64_t kernel[2];       /* r, s */
	int64_t stride[2], dilation[2];
	int64_t pad_begin[2], pad_end[2];  /* top, left; bottom, right */
	int64_t out_pad[2];      /* transpose only */
	int64_t groups;
} onnx_conv;

/* The task string of cv into buf (size n), parameters sorted by name,
 * those with a default value left out as te_prog.key does: conv2d,
 * depthwise_conv2d (groups == c == k), conv2d_transpose, conv1d,
 * conv1d_transpose. TK_EINVAL if it does not fit. */
int onnx_conv_task(const onnx_conv *cv, char *buf, size_t n);

#endif
