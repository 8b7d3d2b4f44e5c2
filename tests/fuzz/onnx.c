/* ONNX models (tunekit import onnx, --network MODEL.onnx): read from
 * memory, inputs of odd length with --input x=1x3x8x8; what the reader
 * prints, when it succeeds, must be a network file net_parse takes whole,
 * and so must its blocked layout's variant. */
#include "fuzz.h"
#include "import/onnx.h"
#include "task/network.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	onnx_input in;
	char *tsv = NULL;
	tk_network *net = NULL;
	if (onnx_input_parse("x=1x3x8x8", &in))
		abort();
	int rc = onnx_read(data, size, "fuzz.onnx", &in, (int)(size & 1), &tsv);
	fuzz_check_rc(rc);
	if ((rc == TK_OK) != (tsv != NULL))
		abort();
	if (rc == TK_OK) {
		if (net_parse("fuzz.onnx", "fuzz", tsv, &net) != TK_OK || net->n < 1)
			abort(); /* the importer's own output must parse back */
		for (int i = 0; i < net->n; i++)
			if (!(net->task[i].weight >= 1))
				abort();
		net_free(net);
		/* every block divides its channels: the blocked variant of a
		 * model read whole is read too, and parses back */
		free(tsv);
		tsv = NULL;
		if (onnx_read_layout(data, size, "fuzz.onnx", &in, (int)(size & 1), ONNX_LAYOUT_BLOCKED,
		                     &tsv) != TK_OK ||
		    net_parse("fuzz.onnx", "fuzz", tsv, &net) != TK_OK)
			abort();
		net_free(net);
	}
	free(tsv);
	return 0;
}
