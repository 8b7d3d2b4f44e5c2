/* Network files (tune --network FILE, measure --network FILE). */
#include "fuzz.h"
#include "task/network.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tk_network *n = NULL;
	int rc = net_load(fuzz_file(data, size, ".tsv"), &n);
	fuzz_check_rc(rc);
	if (rc == TK_OK) {
		for (int i = 0; i < n->n; i++)
			if (!n->task[i].task || !(n->task[i].weight >= 0))
				abort();
		net_free(n);
	}
	return 0;
}
