// commands.h: one entry point per subcommand; main.cpp dispatches to them. argv[0] is the first
// argument after the command name. Each returns the process exit code.
#pragma once

int cmd_train(int argc, char** argv);
int cmd_eval(int argc, char** argv);
int cmd_compare(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_export(int argc, char** argv);
int cmd_generate(int argc, char** argv);
