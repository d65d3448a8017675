/*
 * Preloaded next to libasan when the sanitized extension is tested inside the
 * uninstrumented Postgres binaries (scripts/test.sh, SANITIZE=address).
 *
 * Preloaded into a binary that was not built with ASan, the runtime starts on
 * its first intercepted call, which can come from a library constructor that
 * runs before libasan's own: libgpg-error's calls bindtextdomain(), and the
 * allocation made with glibc's _nl_state_lock write-locked starts ASan there.
 * ASan's start-up looks up swift_demangle with dlsym(); the failed lookup
 * makes dlerror() translate its message, dcgettext() takes the same lock as
 * a reader (refused: the thread holds it) and then releases it as the
 * writer, and the lock's reader count underflows.  The next bindtextdomain()
 * (in every Postgres program's main) then waits forever.
 *
 * Defining the symbol makes the lookup succeed, so start-up never reaches
 * gettext.  ASan offers it the symbol names in its reports first; NULL sends
 * them on to its own C++ demangler, as if the symbol did not exist.
 */
#include <stddef.h>

char	   *swift_demangle(const char *mangled, size_t length, char *out,
						   size_t *out_length, unsigned flags);

char *
swift_demangle(const char *mangled, size_t length, char *out,
			   size_t *out_length, unsigned flags)
{
	return NULL;
}
