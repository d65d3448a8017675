/*
 * tls_tickets.c
 *		TLS session ticket keys shared by every worker, rotated on a schedule.
 *
 * OpenSSL gives each SSL_CTX random ticket keys of its own.  Each worker
 * (and each reload) then had its own: a client that resumed its session
 * on another worker (SO_REUSEPORT spreads a client's connections over
 * them) made a full handshake, and a key lived as long as its worker, so
 * whoever obtained it could decrypt every TLS 1.2 session recorded in that
 * time (a ticket holds the session's master secret).
 *
 * The keys live in shared memory instead: the current key encrypts new
 * tickets, the previous one still decrypts (OpenSSL is told to renew such a
 * ticket), and the one before is overwritten.  A worker keeps a copy and
 * looks at a generation counter on each handshake; the first worker to
 * handshake once webgres.tls_ticket_rotation has passed makes the next key
 * with OpenSSL's RAND_bytes() and swaps it in under a spinlock.  A server
 * idle for two periods drops the previous key too.  A session lives one
 * period at most (SSL_CTX_set_timeout), so no ticket outlives its key, and
 * no key is kept more than two periods.  Keys are never logged, and no
 * setting, function or view shows them.
 */
#include "postgres.h"

#include <time.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "port/atomics.h"
#include "storage/spin.h"
#include "utils/guc.h"

#include "core/shmem.h"
#include "http/tls_tickets.h"

/* webgres.tls_ticket_rotation, in seconds: its default and bounds. */
#define TICKET_ROTATION_DEFAULT 3600
#define TICKET_ROTATION_MIN 1
#define TICKET_ROTATION_MAX (7 * 24 * 3600)
static int	webgres_tls_ticket_rotation = TICKET_ROTATION_DEFAULT;

/* The sizes OpenSSL's ticket callback works with: a key name, AES-256, HMAC-SHA256. */
#define TICKET_NAME_BYTES 16
#define TICKET_AES_BYTES 32
#define TICKET_HMAC_BYTES 32
/* The current key, then the previous one. */
#define TICKET_KEYS 2

typedef struct TicketKey
{
	bool		usable;
	unsigned char name[TICKET_NAME_BYTES];
	unsigned char aes[TICKET_AES_BYTES];
	unsigned char hmac[TICKET_HMAC_BYTES];
} TicketKey;

typedef struct TicketKeys
{
	slock_t		mutex;			/* over keys and current_since */
	pg_atomic_uint64 generation;	/* one more at each rotation */
	int64		current_since;	/* when keys[0] was made, seconds since 1970 */
	TicketKey	keys[TICKET_KEYS];
} TicketKeys;

static TicketKeys *shared = NULL;

/* This process' copy of the keys, as of local_generation. */
static TicketKey local[TICKET_KEYS];
static uint64 local_generation = 0;
static int64 local_since = 0;

/* Sets up the shared keys when the memory is created: none yet, made at first use. */
static void
keys_init(void *mem)
{
	TicketKeys *k = (TicketKeys *) mem;

	SpinLockInit(&k->mutex);
	pg_atomic_init_u64(&k->generation, 0);
	k->current_since = 0;
}

/* Asks for the keys' shared memory; at module load. */
void
tls_tickets_shmem_request(void)
{
	shmem_piece("webgres tls ticket keys", sizeof(TicketKeys), (void **) &shared, keys_init);
}

/*
 * Makes a new current key if no other process did since generation seen;
 * the previous key is kept unless it is older than two periods.
 */
static void
rotate(uint64 seen, int64 now, int64 period)
{
	TicketKey	fresh;

	/* Without randomness, the keys stay as they are; the next handshake tries again. */
	if (RAND_bytes(fresh.name, TICKET_NAME_BYTES) != 1 ||
		RAND_bytes(fresh.aes, TICKET_AES_BYTES) != 1 ||
		RAND_bytes(fresh.hmac, TICKET_HMAC_BYTES) != 1)
	{
		OPENSSL_cleanse(&fresh, sizeof(fresh));
		return;
	}
	fresh.usable = true;
	SpinLockAcquire(&shared->mutex);
	if (pg_atomic_read_u64(&shared->generation) == seen)
	{
		if (shared->keys[0].usable && now - shared->current_since < 2 * period)
			shared->keys[1] = shared->keys[0];
		else
			OPENSSL_cleanse(&shared->keys[1], sizeof(TicketKey));
		shared->keys[0] = fresh;
		shared->current_since = now;
		pg_atomic_write_u64(&shared->generation, seen + 1);
	}
	SpinLockRelease(&shared->mutex);
	OPENSSL_cleanse(&fresh, sizeof(fresh));
}

/* Brings this process' copy of the keys up to date, rotating them when due. */
static void
refresh(void)
{
	int64		now = (int64) time(NULL);
	int64		period = Max(webgres_tls_ticket_rotation, 1);
	uint64		generation = pg_atomic_read_u64(&shared->generation);

	if (generation == local_generation && generation != 0 && now - local_since < period)
		return;
	SpinLockAcquire(&shared->mutex);
	generation = pg_atomic_read_u64(&shared->generation);
	local_since = shared->current_since;
	SpinLockRelease(&shared->mutex);
	if (generation == 0 || now - local_since >= period)
		rotate(generation, now, period);
	SpinLockAcquire(&shared->mutex);
	memcpy(local, shared->keys, sizeof(local));
	local_since = shared->current_since;
	local_generation = pg_atomic_read_u64(&shared->generation);
	SpinLockRelease(&shared->mutex);
}

/* Sets the HMAC-SHA256 key of a ticket in hctx; false if OpenSSL refuses it. */
static bool
set_hmac(EVP_MAC_CTX *hctx, TicketKey *k)
{
	OSSL_PARAM	params[3];

	params[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, k->hmac, TICKET_HMAC_BYTES);
	params[1] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *) "SHA256", 0);
	params[2] = OSSL_PARAM_construct_end();
	return EVP_MAC_CTX_set_params(hctx, params) == 1;
}

/*
 * OpenSSL's ticket callback.  Encrypting (enc 1): names the current key,
 * makes the IV, sets the cipher and the MAC; 1, or 0 for no ticket.
 * Decrypting: finds the key the ticket names: 1 with the current key, 2
 * with the previous (use it, and issue a new ticket), 0 with none (a full
 * handshake), -1 on an error.  On TLS 1.3 always 2: a client uses a
 * ticket once (RFC 8446, C.4), and OpenSSL sends tickets on a resumed 1.3
 * handshake only when told to renew, so a client reconnecting on the
 * tickets it was given would otherwise resume every other time.
 */
static int
on_ticket(SSL *ssl, unsigned char *name, unsigned char *iv, EVP_CIPHER_CTX *cctx,
		  EVP_MAC_CTX *hctx, int enc)
{
	refresh();
	if (enc)
	{
		TicketKey  *k = &local[0];

		if (!k->usable)
			return 0;
		if (RAND_bytes(iv, EVP_CIPHER_get_iv_length(EVP_aes_256_cbc())) != 1)
			return -1;
		memcpy(name, k->name, TICKET_NAME_BYTES);
		if (EVP_EncryptInit_ex(cctx, EVP_aes_256_cbc(), NULL, k->aes, iv) != 1 ||
			!set_hmac(hctx, k))
			return -1;
		return 1;
	}
	for (int i = 0; i < TICKET_KEYS; i++)
	{
		TicketKey  *k = &local[i];

		if (!k->usable || CRYPTO_memcmp(name, k->name, TICKET_NAME_BYTES) != 0)
			continue;
		if (!set_hmac(hctx, k) ||
			EVP_DecryptInit_ex(cctx, EVP_aes_256_cbc(), NULL, k->aes, iv) != 1)
			return -1;
		return (i == 0 && SSL_version(ssl) < TLS1_3_VERSION) ? 1 : 2;
	}
	return 0;
}

/* Makes ctx use the shared ticket keys; sessions live one rotation period. */
void
tls_tickets_install(SSL_CTX *ctx)
{
	if (shared == NULL)
		return;
	SSL_CTX_set_timeout(ctx, Max(webgres_tls_ticket_rotation, 1));
	SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, on_ticket);
}

/* Defines webgres.tls_ticket_rotation; from _PG_init. */
void
tls_tickets_define_settings(void)
{
	DefineCustomIntVariable("webgres.tls_ticket_rotation",
							"How long a TLS session ticket key encrypts new tickets.",
							"The workers share their ticket keys, so a session resumes on "
							"any worker; the key after this long is new, the previous one "
							"still decrypts for one more period, then is destroyed. A "
							"session lives this long at most.",
							&webgres_tls_ticket_rotation,
							TICKET_ROTATION_DEFAULT,
							TICKET_ROTATION_MIN, TICKET_ROTATION_MAX,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);
}
