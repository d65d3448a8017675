/*
 * jwt_secret.c
 *		The HS secret: webgres.jwt_secret_file, else webgres.jwt_secret,
 *		visible to no role (jwt_secret.h).
 *
 * GUC_SUPERUSER_ONLY is not enough on its own: members of
 * pg_read_all_settings (pg_monitor among them) may read such settings, and
 * the postmaster logs a changed setting's new value on reload.  So the
 * setting's check hook moves the secret into the setting's "extra" data,
 * which only the assign hook sees, and leaves the same mask in the variable
 * whatever the value: nothing that reads the variable (SHOW,
 * current_setting(), pg_settings, the reload's "parameter changed" line,
 * the settings a parallel worker is sent) sees the secret, and since the
 * mask never changes the reload has nothing to log.  The value as written
 * in postgresql.conf can still be read through pg_file_settings, which
 * only superusers may read unless one grants it: the file setting keeps
 * the secret out of the configuration altogether.
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "utils/guc.h"
#include "utils/memutils.h"

#include "core/pg_compat.h"
#include "serve/jwt_secret.h"

/* What webgres.jwt_secret's variable holds, whatever the secret is. */
#define SECRET_MASK "********"

/* The secret, as the check hook keeps it for the assign hook (malloc'd). */
typedef struct SecretExtra
{
	size_t		len;
	char		secret[FLEXIBLE_ARRAY_MEMBER];
} SecretExtra;

/* webgres.jwt_secret's variable: always SECRET_MASK. */
static char *secret_setting;
/* webgres.jwt_secret itself, from the setting's extra ("": none). */
static const SecretExtra *setting_secret = NULL;
/* webgres.jwt_secret_file. */
static char *secret_file;

/*
 * Room for why the secret file could not be used: a short phrase and
 * strerror()'s text.
 */
#define FILE_ERROR_MAX 256

/*
 * The secret last read from the file, and the file as it was then (its
 * path, inode and times): it is read again when any of them changes.
 */
static unsigned char *file_secret = NULL;	/* malloc'd */
static size_t file_secret_len = 0;
static char *file_path_then = NULL; /* malloc'd */
static struct stat file_stat_then;
static char file_error_then[FILE_ERROR_MAX];	/* why it could not be used then; "": it could */

/* One more each time the secret may have changed (jwt_secret_generation()). */
static uint64 secret_generation = 1;

/*
 * Check hook of webgres.jwt_secret: refuses a short secret without
 * quoting it, and keeps the value in *extra, leaving the mask in its place.
 */
static bool
check_secret(char **newval, void **extra, GucSource source)
{
	const char *value = *newval != NULL ? *newval : "";
	size_t		len;
	SecretExtra *x;
	char	   *mask;

	/* The mask itself comes back from a parallel worker's copy of the settings. */
	if (strcmp(value, SECRET_MASK) == 0)
		value = "";
	len = strlen(value);
	if (len > 0 && len < JWT_MIN_SECRET_LEN)
	{
		/* GUC's own message would quote the value. */
		GUC_check_errmsg("webgres.jwt_secret is shorter than %d bytes", JWT_MIN_SECRET_LEN);
		GUC_check_errdetail("The value is not shown.");
		GUC_check_errhint("Generate one with: openssl rand -base64 32; better, put it in webgres.jwt_secret_file.");
		return false;
	}
	/* guc.c frees both (the extra and the value) with guc_free(). */
	x = guc_malloc(LOG, offsetof(SecretExtra, secret) + len + 1);
	mask = guc_strdup(LOG, SECRET_MASK);
	if (x == NULL || mask == NULL)
	{
		guc_free(x);
		guc_free(mask);
		GUC_check_errcode(ERRCODE_OUT_OF_MEMORY);
		GUC_check_errmsg("out of memory");
		return false;
	}
	x->len = len;
	memcpy(x->secret, value, len + 1);
	if (*newval != NULL)
	{
		explicit_bzero(*newval, strlen(*newval));
		guc_free(*newval);
	}
	*newval = mask;
	*extra = x;
	return true;
}

/*
 * Assign hook of webgres.jwt_secret: the secret the check hook kept.  Every
 * reload assigns it again; only another secret is a new generation, or each
 * reload would end the streams of tokens it signed.
 */
static void
assign_secret(const char *newval, void *extra)
{
	const SecretExtra *old = setting_secret;
	const SecretExtra *new = (const SecretExtra *) extra;

	if (old == NULL || new == NULL || old->len != new->len ||
		CRYPTO_memcmp(old->secret, new->secret, new->len) != 0)
		secret_generation++;
	setting_secret = new;
}

/* Show hook of webgres.jwt_secret: the mask when a secret is set, else empty. */
static const char *
show_secret(void)
{
	return setting_secret != NULL && setting_secret->len > 0 ? SECRET_MASK : "";
}

/* Defines webgres.jwt_secret and webgres.jwt_secret_file. */
void
jwt_secret_define_settings(void)
{
	DefineCustomStringVariable("webgres.jwt_secret",
							   "Secret for JSON Web Tokens signed with HS256, HS384 or HS512.",
							   "At least 32 bytes; empty accepts no HS-signed token. Shown to "
							   "no role, superusers included (SHOW gives ********). "
							   "webgres.jwt_secret_file, when set, is used instead.",
							   &secret_setting,
							   "",
							   PGC_SIGHUP,
							   GUC_SUPERUSER_ONLY | GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							   check_secret, assign_secret, show_secret);

	DefineCustomStringVariable("webgres.jwt_secret_file",
							   "File holding the secret for JSON Web Tokens signed with HS256, HS384 or HS512.",
							   "Read by the server's operating system user, which must own it "
							   "with no access for group or others (or root with group read at "
							   "most), as ssl_key_file; trailing blanks and newlines are not part "
							   "of the secret. Takes precedence over webgres.jwt_secret.",
							   &secret_file,
							   "",
							   PGC_SIGHUP,
							   GUC_SUPERUSER_ONLY,
							   NULL, NULL, NULL);
}

/* True if st is the file as it was when last read. */
static bool
same_file(const char *path, const struct stat *st)
{
	return file_path_then != NULL && strcmp(file_path_then, path) == 0 &&
		st->st_dev == file_stat_then.st_dev && st->st_ino == file_stat_then.st_ino &&
		st->st_size == file_stat_then.st_size && st->st_mode == file_stat_then.st_mode &&
		st->st_uid == file_stat_then.st_uid &&
		st->st_mtim.tv_sec == file_stat_then.st_mtim.tv_sec &&
		st->st_mtim.tv_nsec == file_stat_then.st_mtim.tv_nsec &&
		st->st_ctim.tv_sec == file_stat_then.st_ctim.tv_sec &&
		st->st_ctim.tv_nsec == file_stat_then.st_ctim.tv_nsec;
}

/*
 * Why the open file st may not hold a secret, or NULL: Postgres' rule for
 * ssl_key_file.  A file owned by the server's user may be read by it alone;
 * one owned by root may be read by its group too (a system-managed key).
 */
static const char *
unsafe_file(const struct stat *st)
{
	if (!S_ISREG(st->st_mode))
		return "it is not a regular file";
	if (st->st_uid != geteuid() && st->st_uid != 0)
		return "it must be owned by the server's operating system user or root";
	if ((st->st_uid == geteuid() && (st->st_mode & (S_IRWXG | S_IRWXO)) != 0) ||
		(st->st_uid == 0 && (st->st_mode & (S_IWGRP | S_IXGRP | S_IRWXO)) != 0))
		return "it has group or world access (it must be u=rw (0600) or less, or u=rw,g=r (0640) or less if owned by root)";
	return NULL;
}

/* Forgets the secret read from the file, wiping it. */
static void
forget_file_secret(void)
{
	if (file_secret != NULL)
	{
		explicit_bzero(file_secret, file_secret_len);
		free(file_secret);
	}
	file_secret = NULL;
	file_secret_len = 0;
}

/*
 * Reads the secret from path into file_secret, unless the file is as it
 * was when last read.  Returns why it cannot be used, or NULL.
 */
static const char *
read_secret_file(const char *path)
{
	int			fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char		buf[JWT_SECRET_FILE_MAX_BYTES + 1];
	ssize_t		n;
	size_t		len;
	const char *why;

	if (fd < 0 || fstat(fd, &st) != 0)
	{
		snprintf(file_error_then, sizeof(file_error_then), "could not open it: %s",
				 strerror(errno));
		if (fd >= 0)
			close(fd);
		if (file_path_then != NULL)
			secret_generation++;
		forget_file_secret();
		free(file_path_then);
		file_path_then = NULL;
		return file_error_then;
	}
	if (same_file(path, &st))
	{
		close(fd);
		return file_error_then[0] != '\0' ? file_error_then : NULL;
	}
	/* A new file, or the same one changed: its secret may be another. */
	secret_generation++;
	forget_file_secret();
	free(file_path_then);
	file_path_then = strdup(path);
	file_stat_then = st;
	file_error_then[0] = '\0';
	if ((why = unsafe_file(&st)) != NULL)
	{
		close(fd);
		strlcpy(file_error_then, why, sizeof(file_error_then));
		return file_error_then;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0)
		snprintf(file_error_then, sizeof(file_error_then), "could not read it: %s",
				 strerror(errno));
	else if (n > JWT_SECRET_FILE_MAX_BYTES)
		snprintf(file_error_then, sizeof(file_error_then), "it is larger than %d bytes",
				 JWT_SECRET_FILE_MAX_BYTES);
	if (file_error_then[0] != '\0')
	{
		explicit_bzero(buf, sizeof(buf));
		return file_error_then;
	}
	/* An editor's trailing newline is not part of the secret. */
	len = (size_t) n;
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r' ||
					   buf[len - 1] == ' ' || buf[len - 1] == '\t'))
		len--;
	if (len < JWT_MIN_SECRET_LEN)
		snprintf(file_error_then, sizeof(file_error_then), "it holds fewer than %d bytes",
				 JWT_MIN_SECRET_LEN);
	else if ((file_secret = malloc(len)) == NULL)
		strlcpy(file_error_then, "out of memory", sizeof(file_error_then));
	else
	{
		memcpy(file_secret, buf, len);
		file_secret_len = len;
	}
	explicit_bzero(buf, sizeof(buf));
	return file_error_then[0] != '\0' ? file_error_then : NULL;
}

/* The secret: from the file when one is set, else the setting's. */
bool
jwt_secret_get(const unsigned char **secret, size_t *len, const char **error)
{
	const char *why;

	*error = NULL;
	if (secret_file != NULL && secret_file[0] != '\0')
	{
		if ((why = read_secret_file(secret_file)) != NULL)
		{
			*error = psprintf("webgres.jwt_secret_file cannot be used: %s", why);
			return false;
		}
		*secret = file_secret;
		*len = file_secret_len;
		return true;
	}
	if (setting_secret == NULL || setting_secret->len == 0)
		return false;
	*secret = (const unsigned char *) setting_secret->secret;
	*len = setting_secret->len;
	return true;
}

/* A number that changes whenever the secret may have: see jwt_secret.h. */
uint64
jwt_secret_generation(void)
{
	static time_t looked_at = 0;
	time_t		now;

	if (secret_file != NULL && secret_file[0] != '\0' &&
		(now = time(NULL)) - looked_at >= JWT_SECRET_RECHECK_S)
	{
		looked_at = now;
		(void) read_secret_file(secret_file);
	}
	return secret_generation;
}

/* Warns of an unusable secret file, or of both settings set. */
void
jwt_secret_check_settings(void)
{
	const unsigned char *secret;
	size_t		len;
	const char *error;

	if (secret_file == NULL || secret_file[0] == '\0')
		return;
	if (!jwt_secret_get(&secret, &len, &error))
		ereport(WARNING,
				(errmsg("%s", error),
				 errdetail("The file is \"%s\"; no HS-signed token is accepted or signed.",
						   secret_file)));
	if (setting_secret != NULL && setting_secret->len > 0)
		ereport(WARNING,
				(errmsg("both webgres.jwt_secret and webgres.jwt_secret_file are set; the file is used"),
				 errhint("Remove webgres.jwt_secret from the configuration.")));
}
