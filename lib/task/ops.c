/*
 * ops: the operator declarations. Each is a text in the te language:
 *
 *   params NAME[=DEFAULT] ... [| NAME=DEFAULT ...]
 *                               integer parameters of the task; a parameter
 *                               without a default is required; values must be
 *                               >= 1, or >= 0 when the default is 0. DEFAULT is
 *                               a number or an earlier parameter's name (then
 *                               it also sets the minimum). Those after '|' are
 *                               optional: the task's key names them only where
 *                               they differ from their default, and one left at
 *                               a numeric default folds out of the indices
 *                               (x*dilation is x), so adding one keeps every
 *                               existing task and its program as they were
 *   let NAME = EXPR             a derived size
 *   input NAME[EXPR, ...]       an input tensor, in call order
 *   const NAME[EXPR, ...] = GEN a constant tensor filled by generator GEN
 *   stage OUT[AX:EXPR, ...] (+= | =) READ (* READ)* [over AX:EXPR ...] [relu]
 *                               one computation; READ is NAME[IDX, ...] over
 *                               the stage's axes; the last stage is the output
 *   vector AXIS                 the last stage's spatial axis AXIS is always
 *                               vectorised, whole (a blocked layout's block);
 *                               an AXIS of extent 1 (a block of 1) leaves the
 *                               choice to the template
 *   divides A B                 parameter A must divide parameter B
 *   flops EXPR                  nominal FLOPs if not the sum over stages
 *
 * EXPR: integers, names, + - * / % (floor), parentheses, and in indices
 * ediv(a, b): exact division (the read is 0 when b does not divide a).
 * A stage of one read and no reduction does no FLOPs (flops 0: a reorder is
 * measured by its latency alone).
 * Layouts are NCHW / NCW; dense and batch_matmul are C = A * B with B laid
 * out [k, n].
 *
 * Convolutions: r x s is the kernel (height x width); stride and dilation
 * are the H axis's, stride_w and dilation_w the W axis's; pad is the top
 * padding, pad_l the left, pad_b the bottom, pad_r the right (ONNX's pads
 * [top, left, bottom, right]); groups split the channels (W holds c/groups
 * input channels per output channel); out_pad adds output rows (columns:
 * out_pad_w) to a transposed convolution.
 */
#include <string.h>

#include "te.h"

const te_opdecl te_ops[] = {
	{ "batch_matmul", "C[b,m,n] = A[b,m,k] * B[b,k,n]",
	  "params b m n k\n"
	  "input A[b, m, k]\n"
	  "input B[b, k, n]\n"
	  "stage C[z:b, i:m, j:n] += A[z, i, r] * B[z, r, j] over r:k\n" },
	{ "conv1d", "O[n,k,ow] = sum I[n,g*c/groups+rc,x*stride+rx*dilation-pad] * W[k,rc,rx]",
	  "params n=1 c w k r=3 stride=1 pad=0 | groups=1 dilation=1 pad_r=pad\n"
	  "divides groups c\n"
	  "divides groups k\n"
	  "let ow = (w + pad + pad_r - dilation*(r - 1) - 1)/stride + 1\n"
	  "input I[n, c, w]\n"
	  "input W[k, c/groups, r]\n"
	  "stage O[b:n, f:k, x:ow] += I[b, (f/(k/groups))*(c/groups) + rc,"
	  " x*stride + rx*dilation - pad] * W[f, rc, rx] over rc:c/groups rx:r\n" },
	{ "conv1d_transpose", "transposed 1-d convolution, W[c,k/groups,r]",
	  "params n=1 c w k r=3 stride=1 pad=0 | groups=1 dilation=1 pad_r=pad out_pad=0\n"
	  "divides groups c\n"
	  "divides groups k\n"
	  "let ow = (w - 1)*stride - pad - pad_r + dilation*(r - 1) + 1 + out_pad\n"
	  "input I[n, c, w]\n"
	  "input W[c, k/groups, r]\n"
	  "stage O[b:n, f:k, x:ow] += I[b, (f/(k/groups))*(c/groups) + rc,"
	  " ediv(x + pad - rx*dilation, stride)] * W[(f/(k/groups))*(c/groups) + rc,"
	  " f%(k/groups), rx] over rc:c/groups rx:r\n" },
	{ "conv2d", "O[n,k,oh,ow] = sum I[n,g*c/groups+rc,y*stride+ry*dilation-pad,x*stride_w+rx*dilation_w-pad_l] * W[k,rc,ry,rx]",
	  "params n=1 c h w k r=3 s=3 stride=1 pad=0 | groups=1 stride_w=stride dilation=1"
	  " dilation_w=dilation pad_l=pad pad_b=pad pad_r=pad_l\n"
	  "divides groups c\n"
	  "divides groups k\n"
	  "let oh = (h + pad + pad_b - dilation*(r - 1) - 1)/stride + 1\n"
	  "let ow = (w + pad_l + pad_r - dilation_w*(s - 1) - 1)/stride_w + 1\n"
	  "input I[n, c, h, w]\n"
	  "input W[k, c/groups, r, s]\n"
	  "stage O[b:n, f:k, y:oh, x:ow] += I[b, (f/(k/groups))*(c/groups) + rc,"
	  " y*stride + ry*dilation - pad, x*stride_w + rx*dilation_w - pad_l]"
	  " * W[f, rc, ry, rx] over rc:c/groups ry:r rx:s\n" },
	{ "conv2d_nchwc", "conv2d in blocked layouts: I[n,c/cb,h,w,cb], W[k/kb,c/cb,r,s,cb,kb] -> O[n,k/kb,oh,ow,kb]",
	  "params n=1 c h w k r=3 s=3 stride=1 pad=0 cb=16 kb=16 | stride_w=stride dilation=1"
	  " dilation_w=dilation pad_l=pad pad_b=pad pad_r=pad_l\n"
	  "divides cb c\n"
	  "divides kb k\n"
	  "let oh = (h + pad + pad_b - dilation*(r - 1) - 1)/stride + 1\n"
	  "let ow = (w + pad_l + pad_r - dilation_w*(s - 1) - 1)/stride_w + 1\n"
	  "input I[n, c/cb, h, w, cb]\n"
	  "input W[k/kb, c/cb, r, s, cb, kb]\n"
	  "stage O[b:n, fo:k/kb, y:oh, x:ow, fi:kb] += I[b, rco, y*stride + ry*dilation - pad,"
	  " x*stride_w + rx*dilation_w - pad_l, rci]"
	  " * W[fo, rco, ry, rx, rci, fi] over rco:c/cb ry:r rx:s rci:cb\n"
	  "vector fi\n" },
	{ "conv2d_transpose", "transposed 2-d convolution, W[c,k/groups,r,s]",
	  "params n=1 c h w k r=3 s=3 stride=1 pad=0 | groups=1 stride_w=stride dilation=1"
	  " dilation_w=dilation pad_l=pad pad_b=pad pad_r=pad_l out_pad=0 out_pad_w=out_pad\n"
	  "divides groups c\n"
	  "divides groups k\n"
	  "let oh = (h - 1)*stride - pad - pad_b + dilation*(r - 1) + 1 + out_pad\n"
	  "let ow = (w - 1)*stride_w - pad_l - pad_r + dilation_w*(s - 1) + 1 + out_pad_w\n"
	  "input I[n, c, h, w]\n"
	  "input W[c, k/groups, r, s]\n"
	  "stage O[b:n, f:k, y:oh, x:ow] += I[b, (f/(k/groups))*(c/groups) + rc,"
	  " ediv(y + pad - ry*dilation, stride), ediv(x + pad_l - rx*dilation_w, stride_w)]"
	  " * W[(f/(k/groups))*(c/groups) + rc, f%(k/groups), ry, rx]"
	  " over rc:c/groups ry:r rx:s\n" },
	{ "conv2d_winograd", "3x3 stride-1 conv2d by Winograd F(m,3), m = 2 or 4",
	  "params n=1 c h w k pad=1 m=2\n"
	  "let a = m + 2\n"
	  "let oh = h + 2*pad - 2\n"
	  "let ow = w + 2*pad - 2\n"
	  "let th = (oh + m - 1)/m\n"
	  "let tw = (ow + m - 1)/m\n"
	  "input I[n, c, h, w]\n"
	  "input W[k, c, 3, 3]\n"
	  "const G[a, 3] = winograd_g\n"
	  "const Bt[a, a] = winograd_bt\n"
	  "const At[m, a] = winograd_at\n"
	  "stage U[e:a, u:a, f:k, q:c] += G[e, ry] * W[f, q, ry, rx] * G[u, rx] over ry:3 rx:3\n"
	  "stage V[e:a, u:a, q:c, b:n, ty:th, tx:tw] += Bt[e, ra]"
	  " * I[b, q, ty*m + ra - pad, tx*m + rb - pad] * Bt[u, rb] over ra:a rb:a\n"
	  "stage M[e:a, u:a, f:k, b:n, ty:th, tx:tw] += U[e, u, f, q] * V[e, u, q, b, ty, tx]"
	  " over q:c\n"
	  "stage Y[f:k, b:n, ty:th, tx:tw, vy:m, vx:m] += At[vy, ra] * M[ra, rb, f, b, ty, tx]"
	  " * At[vx, rb] over ra:a rb:a\n"
	  "stage O[b:n, f:k, y:oh, x:ow] = Y[f, b, y/m, x/m, y%m, x%m]\n"
	  "flops 2*n*k*oh*ow*c*9\n" },
	{ "dense", "C[m,n] = A[m,k] * B[k,n]",
	  "params m n k\n"
	  "input A[m, k]\n"
	  "input B[k, n]\n"
	  "stage C[i:m, j:n] += A[i, r] * B[r, j] over r:k\n" },
	{ "dense_relu", "C[m,n] = max(A[m,k] * B[k,n], 0)",
	  "params m n k\n"
	  "input A[m, k]\n"
	  "input B[k, n]\n"
	  "stage C[i:m, j:n] += A[i, r] * B[r, j] over r:k relu\n" },
	{ "depthwise_conv2d", "O[n,c,oh,ow] = sum I[n,c,y*stride+ry*dilation-pad,x*stride_w+rx*dilation_w-pad_l] * W[c,0,ry,rx]",
	  "params n=1 c h w r=3 s=3 stride=1 pad=0 | stride_w=stride dilation=1"
	  " dilation_w=dilation pad_l=pad pad_b=pad pad_r=pad_l\n"
	  "let oh = (h + pad + pad_b - dilation*(r - 1) - 1)/stride + 1\n"
	  "let ow = (w + pad_l + pad_r - dilation_w*(s - 1) - 1)/stride_w + 1\n"
	  "input I[n, c, h, w]\n"
	  "input W[c, 1, r, s]\n"
	  "stage O[b:n, f:c, y:oh, x:ow] += I[b, f, y*stride + ry*dilation - pad,"
	  " x*stride_w + rx*dilation_w - pad_l] * W[f, 0, ry, rx] over ry:r rx:s\n" },
	{ "depthwise_conv2d_nchwc", "depthwise_conv2d in blocked layouts: I[n,c/cb,h,w,cb], W[c/cb,r,s,cb] -> O[n,c/cb,oh,ow,cb]",
	  "params n=1 c h w r=3 s=3 stride=1 pad=0 cb=16 | stride_w=stride dilation=1"
	  " dilation_w=dilation pad_l=pad pad_b=pad pad_r=pad_l\n"
	  "divides cb c\n"
	  "let oh = (h + pad + pad_b - dilation*(r - 1) - 1)/stride + 1\n"
	  "let ow = (w + pad_l + pad_r - dilation_w*(s - 1) - 1)/stride_w + 1\n"
	  "input I[n, c/cb, h, w, cb]\n"
	  "input W[c/cb, r, s, cb]\n"
	  "stage O[b:n, fo:c/cb, y:oh, x:ow, fi:cb] += I[b, fo, y*stride + ry*dilation - pad,"
	  " x*stride_w + rx*dilation_w - pad_l, fi]"
	  " * W[fo, ry, rx, fi] over ry:r rx:s\n"
	  "vector fi\n" },
	{ "layout_transform", "reorder between channel blocks: I[n,c/ib,h,w,ib] -> O[n,c/ob,h,w,ob] (block 1 = NCHW)",
	  "params n=1 c h w ib=1 ob=16\n"
	  "divides ib c\n"
	  "divides ob c\n"
	  "input I[n, c/ib, h, w, ib]\n"
	  "stage O[b:n, fo:c/ob, y:h, x:w, fi:ob] = I[b, (fo*ob + fi)/ib, y, x, (fo*ob + fi)%ib]\n"
	  "vector fi\n" },
};

const int te_nops = ArraySize(te_ops);

const te_opdecl *te_op_find(const char *name)
{
	for (int i = 0; i < te_nops; i++)
		if (!strcmp(te_ops[i].name, name))
			return &te_ops[i];
	return NULL;
}
