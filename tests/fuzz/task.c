/* Task strings (tunekit measure --task, network files): parse, and where
 * the task parses, build its configuration space and round-trip a config. */
#include "fuzz.h"
#include "space/space.h"
#include "task/te.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size);
	te_prog *p = NULL;
	int rc = te_task_parse(s, &p);
	fuzz_check_rc(rc);
	if (rc == TK_OK) {
		sp_space *sp = NULL;
		if (sp_space_create(p, &sp) == TK_OK) {
			sp_config c, d;
			tk_sb sb;
			sp_naive(sp, &c);
			tk_sb_init(&sb);
			sp_format(&sb, sp, &c);
			char *text = tk_sb_take(&sb);
			if (!text || sp_parse(sp, text, &d) != TK_OK || sp_index(sp, &c) != sp_index(sp, &d))
				abort(); /* a space's own configuration must parse back */
			free(text);
			sp_space_free(sp);
		}
		te_prog_free(p);
	}
	free(s);
	return 0;
}
