/* Runs a provider's boot script (an instance's user data) as the instance
 * would, in a scratch directory, so tests check what it does rather than
 * how it reads: /run/ebb and /var/log/ are moved into the directory,
 * `curl` is a stub answering the metadata service (a session token to a
 * PUT, `metadata` to every GET) and `ebb-agent` a stub that exits 0. */
#ifndef EBB_TEST_BOOT_SCRIPT_H
#define EBB_TEST_BOOT_SCRIPT_H

/* Runs `script` with sh; *status is sh's exit status. Returns the agent
 * token it wrote to /run/ebb/agent-token (free it), or NULL when it wrote
 * none. */
char *boot_script_run(const char *script, const char *metadata, int *status);

#endif
