// commands.h: one entry point per subcommand; main.cpp dispatches to them. argv[0] is the first
// argument after the command name. Each returns the process exit code.
#pragma once

struct CliArgs;

int cmd_train(int argc, char** argv);
int cmd_eval(int argc, char** argv);
// `eval --hellaswag` (hellaswag_cmd.cpp), with eval's parsed flags; and the check that its own flags are
// not given without it.
int cmd_eval_hellaswag(const CliArgs& args);
void eval_check_hellaswag_flags(const CliArgs& args);
int cmd_compare(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_export(int argc, char** argv);
int cmd_generate(int argc, char** argv);
int cmd_chat(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_plot(int argc, char** argv);
