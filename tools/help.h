/* The help of every `weft` command: its usage, what it does, and each flag
 * with its argument, what it does and what applies when it is not given.
 * `weft help CMD` and `weft CMD --help` both print it from here, so the
 * two never disagree; tests/test_cli.py checks that every flag a command's
 * parser compares against is listed. */
#ifndef WEFT_TOOLS_HELP_H_
#define WEFT_TOOLS_HELP_H_

#include <stddef.h>
#include <stdio.h>

typedef struct help_flag {
  const char* flag;          /* "--epochs" */
  const char* argument;      /* "N"; NULL for a switch */
  const char* description;
  const char* default_value; /* "2", "off"; NULL: no default */
} help_flag;

typedef struct help_command {
  const char* name;
  const char* summary;     /* one line, for `weft help` */
  const char* usage;       /* what follows "weft NAME", "" for nothing */
  const help_flag* flags;  /* ends with an entry whose flag is NULL */
} help_command;

/* The command called `name`, or NULL. */
const help_command* help_find(const char* name);

/* The commands in the order `weft help` lists them. */
size_t help_command_count(void);
const help_command* help_command_at(size_t index);

/* "usage: ...", the summary, then "options:" with every flag. */
void help_print(FILE* out, const help_command* command);

#endif /* WEFT_TOOLS_HELP_H_ */
