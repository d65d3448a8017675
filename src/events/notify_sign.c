/*
 * notify_sign.c
 *		Notifications whose sender an event stream can trust.
 *
 * A signed payload is
 *
 *		webgres-signed:v1:<role oid>:<MAC, 32 hex digits>:<payload>
 *
 * where the MAC is HMAC-SHA256, cut to 16 bytes, over the database's and
 * the role's OIDs, the channel and the payload, keyed by 32 random bytes
 * made when shared memory is created.  The key is never written anywhere
 * else: no setting, no function and no log line shows it, and a restart
 * makes a new one (a signed notification lives in the queue of one
 * postmaster's life only).
 *
 * The sender is the current user when webgres.notify() runs: a role signs
 * as itself, or as the owner of a SECURITY DEFINER function it may call.
 * Checking the sender's PID at delivery instead would not be sound: the
 * sender may have exited before the worker reads the queue, and its PID
 * may then belong to another session.
 *
 * The payload is visible to every listener of the channel, so a role that
 * may LISTEN there can send the same signed payload again (a replay of an
 * event that was sent, never a new one); docs/events.md says so.
 */
#include "postgres.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "commands/async.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "port/pg_bswap.h"
#include "tcop/utility.h"
#include "utils/builtins.h"

#include "core/shmem.h"
#include "events/notify_sign.h"

/* What starts a signed payload. */
#define SIGN_PREFIX "webgres-signed:v1:"
/* Bytes of the key, and of the MAC kept (hex: twice as many digits). */
#define SIGN_KEY_BYTES 32
#define SIGN_MAC_BYTES 16

typedef struct NotifyKey
{
	uint8		key[SIGN_KEY_BYTES];
} NotifyKey;

static NotifyKey *notify_key = NULL;

PG_FUNCTION_INFO_V1(webgres_notify);

/* Makes the key when the shared memory is created. */
static void
key_init(void *mem)
{
	NotifyKey  *k = (NotifyKey *) mem;

	if (!pg_strong_random(k->key, SIGN_KEY_BYTES))
		ereport(FATAL,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate the key that signs webgres notifications")));
}

/* Asks for the key's shared memory; at module load. */
void
notify_sign_shmem_request(void)
{
	shmem_piece("webgres notify key", sizeof(NotifyKey), (void **) &notify_key, key_init);
}

/*
 * The MAC of (database, role, channel, payload), as hex digits and a NUL in
 * hex (2 * SIGN_MAC_BYTES + 1 bytes).  False if it cannot be computed.
 */
static bool
compute_mac(Oid role, const char *channel, const char *payload, char *hex)
{
	size_t		clen = strlen(channel);
	size_t		plen = strlen(payload);
	size_t		len = 8 + clen + 1 + plen;
	uint8	   *msg;
	uint8		md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	uint32		db = pg_hton32((uint32) MyDatabaseId);
	uint32		r = pg_hton32((uint32) role);
	bool		ok;

	if (notify_key == NULL)
		return false;
	msg = palloc(len);
	memcpy(msg, &db, 4);
	memcpy(msg + 4, &r, 4);
	memcpy(msg + 8, channel, clen + 1);
	memcpy(msg + 8 + clen + 1, payload, plen);
	ok = HMAC(EVP_sha256(), notify_key->key, SIGN_KEY_BYTES, msg, len, md, &mdlen) != NULL &&
		mdlen >= SIGN_MAC_BYTES;
	pfree(msg);
	if (ok)
		hex[hex_encode((const char *) md, SIGN_MAC_BYTES, hex)] = '\0';
	OPENSSL_cleanse(md, sizeof(md));
	return ok;
}

/* Whether payload is a valid signed one for channel; its sender and inner payload. */
bool
notify_sign_verify(const char *channel, const char *payload, Oid *role, const char **inner)
{
	const char *p = payload;
	char		expected[2 * SIGN_MAC_BYTES + 1];
	char	   *end;
	unsigned long oid;

	if (strncmp(p, SIGN_PREFIX, sizeof(SIGN_PREFIX) - 1) != 0)
		return false;
	p += sizeof(SIGN_PREFIX) - 1;
	if (*p < '0' || *p > '9')
		return false;
	errno = 0;
	oid = strtoul(p, &end, 10);
	if (errno != 0 || *end != ':' || oid == 0 || oid > PG_UINT32_MAX)
		return false;
	p = end + 1;
	if (strlen(p) < 2 * SIGN_MAC_BYTES + 1 || p[2 * SIGN_MAC_BYTES] != ':')
		return false;
	if (!compute_mac((Oid) oid, channel, p + 2 * SIGN_MAC_BYTES + 1, expected))
		return false;
	/* In constant time: a forger learns nothing from how long a refusal takes. */
	if (CRYPTO_memcmp(expected, p, 2 * SIGN_MAC_BYTES) != 0)
		return false;
	*role = (Oid) oid;
	*inner = p + 2 * SIGN_MAC_BYTES + 1;
	return true;
}

/* webgres.notify(channel, payload): NOTIFY, signed as the current user. */
Datum
webgres_notify(PG_FUNCTION_ARGS)
{
	char	   *channel = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *payload = text_to_cstring(PG_GETARG_TEXT_PP(1));
	Oid			role = GetUserId();
	char		mac[2 * SIGN_MAC_BYTES + 1];

	if (notify_key == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("webgres must be loaded via shared_preload_libraries to sign notifications")));
	/* As pg_notify(): NOTIFY is refused during recovery. */
	PreventCommandDuringRecovery("webgres.notify()");
	if (!compute_mac(role, channel, payload, mac))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not sign the notification")));
	/* Async_Notify() checks the channel's name and the whole payload's length. */
	Async_Notify(channel, psprintf(SIGN_PREFIX "%u:%s:%s", role, mac, payload));
	PG_RETURN_VOID();
}
