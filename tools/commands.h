/* Subcommands of `weft` that live in files of their own.  Each takes its
 * own argv (argv[0] is the command name) and returns the exit code. */
#ifndef WEFT_TOOLS_COMMANDS_H_
#define WEFT_TOOLS_COMMANDS_H_

int weft_command_place(int argc, char** argv);
int weft_command_train(int argc, char** argv);
int weft_command_tfrecord(int argc, char** argv);
int weft_command_conformance(int argc, char** argv);
int weft_command_inspect(int argc, char** argv);
int weft_command_export(int argc, char** argv);
int weft_command_run(int argc, char** argv);

#endif /* WEFT_TOOLS_COMMANDS_H_ */
