/*
 * import: records measured by other tuners (Kernel Tuner cache files,
 * AutoTVM logs) into the store, one summary line per file; and the task
 * list of an ONNX model, printed as a network file (no store involved).
 */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "import/autotvm.h"
#include "import/kernel_tuner.h"
#include "import/onnx.h"
#include "store/store_import.h"

static const char *const usage[] = {
	"tunekit import kernel-tuner FILE.json[.gz]... [--hardware NAME]\n"
	"       tunekit import autotvm FILE.log...\n"
	"       tunekit import onnx MODEL.onnx [--input NAME=D1xD2x...]... [--layout nchw|blocked]",
	"Import records measured by other tuners into the store, each file as one run.\n"
	"kernel-tuner: Kernel Tuner cache files (JSON, gzip-compressed or not); each becomes the\n"
	"task kt:KERNEL:SIZES with its tune_params as search space, on the hardware kt:DEVICE,\n"
	"with one record per cache entry (failed configurations as invalid records).\n"
	"autotvm: AutoTVM logs (JSON lines, version 0.2); records of tunekit's own templates\n"
	"(tunekit.OP, as 'tunekit export --autotvm' writes them) become records again; records\n"
	"of other templates and malformed lines are kept as foreign records with the reason.\n"
	"A FILE of - is standard input (once per command). Records already imported are skipped, so importing a file twice adds nothing. Prints\n"
	"one summary line per file.\n"
	"onnx: infer the shape of every tensor of an ONNX model and print its tasks (Conv,\n"
	"ConvTranspose, Gemm, MatMul, Einsum) as a network file (weight<TAB>task, a '# node\n"
	"NAME (OP)' comment before each task); the store is not touched. Input shapes are the\n"
	"model's, or those of --input (a symbolic dimension needs one). --layout blocked prints\n"
	"the blocked variant: convolutions in NCHW[x]c and a layout_transform task per reorder.",
};

static struct {
	const char *hardware, *layout;
	opt_list input;
} o;

static const opt options[] = {
	{ OPT_STRING, "hardware", 0, &o.hardware, "NAME", "kernel-tuner: the device (default: the file's device_name)" },
	{ OPT_LIST, "input", 0, &o.input, "NAME=DIMS", "onnx: the shape of a graph input, as 1x3x224x224 (repeatable)" },
	{ OPT_STRING, "layout", 0, &o.layout, "L", "onnx: nchw (the model's, default) or blocked" },
	OPT_END_
};

static int import_kt(tk_ctx *ctx, tk_store *st, const char *path)
{
	kt_stats ks;
	int rc = kt_import(st, path, o.hardware, ctx->cmdline, &ks);
	if (rc)
		return tk_fail(ctx, rc, NULL);
	printf("%s: task %s on %s: %lld %srecords (%lld invalid), space %llu configurations,"
	       " %lld duplicates", path, ks.task, ks.hardware, (long long)ks.records,
	       ks.duplicates ? "new " : "", (long long)ks.invalid,
	       (unsigned long long)ks.space_size, (long long)ks.duplicates);
	if (ks.foreign)
		printf(", %lld foreign", (long long)ks.foreign);
	putchar('\n');
	return EXIT_OK;
}

static int print_reason(void *p, const char *reason, int64_t n)
{
	int *first = p;
	printf("%s%lld %s", *first ? ": " : ", ", (long long)n, reason);
	*first = 0;
	return 0;
}

static int import_autotvm(tk_ctx *ctx, tk_store *st, const char *path)
{
	autotvm_stats as;
	int64_t before;
	int first = 1, rc;
	if ((rc = store_foreign_max_id(st, &before)) ||
	    (rc = autotvm_import(st, path, ctx->cmdline, &as)))
		return tk_fail(ctx, rc, NULL);
	printf("%s: %lld %srecords, %lld duplicates, %lld foreign", path, (long long)as.records,
	       as.duplicates ? "new " : "", (long long)as.duplicates, (long long)as.foreign);
	if (as.foreign && (rc = store_foreign_reasons(st, "autotvm", before, print_reason, &first))) {
		putchar('\n');
		return tk_fail(ctx, rc, NULL);
	}
	putchar('\n');
	return EXIT_OK;
}

static int import_onnx(tk_ctx *ctx, int argc, char **argv)
{
	onnx_input *in;
	char *tsv;
	int rc;
	if (argc != 2)
		return tk_fail(ctx, TK_EINVAL, "onnx: expected one MODEL.onnx");
	if (o.hardware)
		return tk_fail(ctx, TK_EINVAL, "--hardware applies to kernel-tuner files only");
	int layout = layout_parse(o.layout);
	if (layout != LAYOUT_NCHW && layout != LAYOUT_BLOCKED)
		return tk_fail(ctx, TK_EINVAL, "--layout '%s': expected nchw or blocked", o.layout);
	if (!(in = calloc((size_t)o.input.n + 1, sizeof *in)))
		return tk_fail(ctx, TK_ENOMEM, "out of memory");
	for (int i = 0; i < o.input.n; i++)
		if ((rc = onnx_input_parse(o.input.v[i], &in[i]))) {
			free(in);
			return tk_fail(ctx, rc, NULL);
		}
	rc = onnx_import_layout(argv[1], in, o.input.n,
	                        layout == LAYOUT_BLOCKED ? ONNX_LAYOUT_BLOCKED : ONNX_LAYOUT_NCHW, &tsv);
	free(in);
	if (rc)
		return tk_fail(ctx, rc, NULL);
	fputs(tsv, stdout);
	free(tsv);
	return fflush(stdout) || ferror(stdout) ? tk_fail(ctx, TK_EIO, "standard output: write error")
	                                        : EXIT_OK;
}

int cmd_import(int argc, char **argv, tk_ctx *ctx)
{
	tk_store *st;
	int rc, kt, status = EXIT_OK;
	if ((rc = opt_parse(ctx, &argc, argv, options, usage)))
		return rc < 0 ? EXIT_OK : rc;
	if (argc < 1)
		return tk_fail(ctx, TK_EINVAL, "expected a format: kernel-tuner, autotvm or onnx");
	if (!strcmp(argv[0], "onnx"))
		return import_onnx(ctx, argc, argv);
	if (o.input.n || o.layout)
		return tk_fail(ctx, TK_EINVAL, "--%s applies to onnx models only",
		               o.input.n ? "input" : "layout");
	kt = !strcmp(argv[0], "kernel-tuner");
	if (!kt && strcmp(argv[0], "autotvm"))
		return tk_fail(ctx, TK_EINVAL, "unknown format '%s' (kernel-tuner, autotvm, onnx)", argv[0]);
	if (argc < 2)
		return tk_fail(ctx, TK_EINVAL, "no file to import");
	if (!kt && o.hardware)
		return tk_fail(ctx, TK_EINVAL, "--hardware applies to kernel-tuner files only");
	for (int i = 1, nstdin = 0; i < argc; i++)
		if (!strcmp(argv[i], "-") && ++nstdin > 1)
			return tk_fail(ctx, TK_EINVAL, "standard input (-) can be imported once per command");
	if ((rc = tk_ctx_store(ctx, &st)))
		return rc;
	for (int i = 1; i < argc; i++) {
		rc = kt ? import_kt(ctx, st, argv[i]) : import_autotvm(ctx, st, argv[i]);
		fflush(stdout);
		if (rc && !status)
			status = rc;
		if (rc == EXIT_STORE)
			break;
	}
	return status;
}
