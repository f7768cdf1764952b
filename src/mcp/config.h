/* The MCP server's configuration: the tier and limits every run_python call
 * gets, fixed by the deployer (a JSON file and/or command-line flags), never
 * by the agent. */
#ifndef AJ_MCP_CONFIG_H
#define AJ_MCP_CONFIG_H

#include "agentjail.h"

struct mcp_config {
	struct aj_config sandbox;
	unsigned concurrency;    /* runs at once; more calls wait their turn */
	/* One session per connection (sandbox.session bounds it), and the
	 * file tools beside run_python; false: every call a fresh sandbox. */
	bool sessions;
	/* The tools that run something (tool_files.h's TOOL_BITs): run_python
	 * unless the deployer names others (--tools; run_command needs
	 * sessions). */
	unsigned tools;
	/* owned copies of the file's strings: image, python, docker_image,
	 * docker_socket, state_dir, preload, trust_ca, egress_ca */
	char *strings[8];
	/* The text of the secrets file "secrets" names (secrets_file.h), owned
	 * (sandbox.secrets points here); wiped when freed: it holds values. */
	char *secrets;
	/* ro_bind's entries, owned (sandbox.ro_binds points here) */
	char *ro_binds[AJ_MAX_RO_BINDS];
	const char *ro_bind_list[AJ_MAX_RO_BINDS];
	/* allow_hosts' and allow_cidrs' rules, owned (sandbox.allow_hosts and
	 * allow_cidrs point at the lists) */
	char *allow_hosts[AJ_MAX_EGRESS_RULES];
	const char *allow_host_list[AJ_MAX_EGRESS_RULES];
	char *allow_cidrs[AJ_MAX_EGRESS_RULES];
	const char *allow_cidr_list[AJ_MAX_EGRESS_RULES];
	/* env's variables as "NAME=VALUE", owned (sandbox.env points at the list) */
	char *env[AJ_MAX_ENV];
	const char *env_list[AJ_MAX_ENV];
};

#define MCP_DEFAULT_CONCURRENCY 4
#define MCP_MAX_CONCURRENCY 256

void mcp_config_init(struct mcp_config *c);
/* Reads FILE over c. Unknown keys and wrong types are errors naming the
 * key; 0 or -errno with err. */
int mcp_config_load(struct mcp_config *c, const char *path, struct aj_error *err);
/* A list of the tools that run something ("run_python,run_command") as
 * *tools: 0, or -EINVAL with err naming the name it does not know. */
int mcp_tools_parse(const char *list, unsigned *tools, struct aj_error *err);
/* Whether c's tools can be served (run_command only in a session): 0, or
 * -EINVAL with err saying why. */
int mcp_tools_check(const struct mcp_config *c, struct aj_error *err);
void mcp_config_free(struct mcp_config *c);

#endif
