/* Configuration strings (measure --config, record streams) against the
 * spaces of a dense, a conv2d and a depthwise task: parse, and a parsed
 * configuration formats to text that parses to the same point. */
#include "fuzz.h"
#include "space/space.h"
#include "task/te.h"

static const char *const tasks[] = {
	"dense:m=64,n=48,k=32", "conv2d:c=16,h=14,w=14,k=32,pad=1", "depthwise_conv2d:c=32,h=28,w=28,pad=1",
};
static te_prog *prog[3];
static sp_space *space[3];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!space[0])
		for (int i = 0; i < 3; i++)
			if (te_task_parse(tasks[i], &prog[i]) || sp_space_create(prog[i], &space[i]))
				abort();
	if (size < 1)
		return 0;
	const sp_space *sp = space[data[0] % 3];
	char *s = fuzz_str(data + 1, size - 1);
	sp_config c, d;
	int rc = sp_parse(sp, s, &c);
	fuzz_check_rc(rc);
	if (rc == TK_OK) {
		tk_sb sb;
		tk_sb_init(&sb);
		sp_format(&sb, sp, &c);
		char *text = tk_sb_take(&sb);
		if (!text || sp_parse(sp, text, &d) != TK_OK || sp_index(sp, &c) != sp_index(sp, &d))
			abort();
		free(text);
	}
	free(s);
	return 0;
}
