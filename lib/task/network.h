/*
 * network: the tasks of a whole network with their weights (how often each
 * occurs), from data/networks/NAME.tsv (built into the binary) or from any
 * file in that format: '#' comments, a header line "weight<TAB>task", then
 * one "WEIGHT<TAB>TASK" line per distinct task.
 */
#ifndef TK_NETWORK_H
#define TK_NETWORK_H

typedef struct net_task {
	char *task;     /* canonical task string */
	double weight;  /* occurrences in one forward pass */
} net_task;

typedef struct tk_network {
	char *name;
	int n;
	net_task *task;
} tk_network;

/* Load a built-in network by name ("resnet-18") or a file by path (anything
 * containing '/' or ending in .tsv). Every task is parsed and stored in its
 * canonical form. TK_EINVAL with "FILE:LINE: reason" for malformed files,
 * TK_ENOTFOUND for unknown names, TK_EIO for unreadable files. Free with
 * net_free(). */
int net_load(const char *name, tk_network **out);
void net_free(tk_network *n);

/* Parse the text of a network file (the format above) into a network
 * named name; where names the text in messages ("WHERE:LINE: reason").
 * Errors as net_load(). Free with net_free(). */
int net_parse(const char *where, const char *name, const char *text, tk_network **out);

/* The tasks of the nnet networks aNet[] as one network *out named after
 * the first: each task once, in the order met, at its largest weight (how
 * --layout auto tunes two variants of a network on one budget). TK_ENOMEM.
 * Free with net_free(). */
int net_union(const tk_network *const *aNet, int nnet, tk_network **out);

/* Names of the built-in networks, NULL-terminated. */
const char *const *net_builtin(void);

#endif
