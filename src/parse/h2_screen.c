/*
 * h2_screen.c
 *		Counting what an HTTP/2 client sends, before libh2o acts on it.
 *
 * A small state machine over frame headers: it collects each 9-byte
 * header, charges the frame to the connection's budgets as soon as the
 * header is complete, and passes over the payload (reading only the pad
 * length of a padded DATA frame, to tell an empty one).  Nothing here
 * checks that the frames are valid: h2o does, and closes the connection
 * on a protocol error; the screening only has to stay in step with it.
 *
 * A decoded request is screened by the HTTP/1 screen's own rules
 * (screen_method, screen_origin_target, screen_host, screen_field), so that
 * the two protocols cannot drift apart.
 */
#include <string.h>

#include "parse/h2_screen.h"

/* Reset points a RST_STREAM costs and an answered request earns. */
#define RESET_COST 2
#define RESET_REFUND 1

/* Starts a connection's screening. */
void
h2_screen_init(H2Screen *s, int max_resets)
{
	memset(s, 0, offsetof(H2Screen, resets));
	s->nresets = 0;
	s->verdict = H2_OK;
	s->frames = s->reset_frames = s->control_frames = 0;
	if (max_resets < 1)
		max_resets = 1;
	if (max_resets > H2_MAX_REMEMBERED_RESETS)
		max_resets = H2_MAX_REMEMBERED_RESETS;
	s->reset_points_max = s->reset_points = max_resets * RESET_COST;
	s->control_points = H2_CONTROL_BUDGET;
}

/* Records the first overspent budget; later ones do not replace it. */
static H2Verdict
judge(H2Screen *s, H2Verdict v)
{
	if (s->verdict == H2_OK)
		s->verdict = v;
	return s->verdict;
}

/* Charges one frame that carries no request and no data. */
static void
charge_control(H2Screen *s)
{
	s->control_frames++;
	if (--s->control_points < 0)
		judge(s, H2_TOO_MANY_CONTROL_FRAMES);
}

/* Charges a DATA frame whose payload (after padding) is empty. */
static void
charge_data(H2Screen *s, uint32_t content)
{
	/* The last DATA frame of a body may be empty, to carry END_STREAM. */
	if (content == 0 && !(s->flags & H2_FLAG_END_STREAM))
		charge_control(s);
}

/* Charges one frame of a header block. */
static void
charge_block(H2Screen *s)
{
	s->block_bytes += s->length;
	s->block_frames++;
	if (s->block_bytes > H2_MAX_HEADER_BLOCK)
		judge(s, H2_HEADER_BLOCK_TOO_LARGE);
	else if (s->block_frames > H2_MAX_HEADER_BLOCK_FRAMES)
		judge(s, H2_TOO_MANY_CONTINUATIONS);
	s->in_block = !(s->flags & H2_FLAG_END_HEADERS);
}

/* Charges the frame whose header was just completed. */
static void
charge_frame(H2Screen *s)
{
	s->frames++;
	switch (s->type)
	{
		case H2_FRAME_DATA:
			if ((s->flags & H2_FLAG_PADDED) && s->length > 0)
				s->want_pad = true;		/* charged once the pad length is read */
			else
				charge_data(s, s->length);
			break;
		case H2_FRAME_HEADERS:
			s->block_bytes = 0;
			s->block_frames = 0;
			charge_block(s);
			break;
		case H2_FRAME_CONTINUATION:
			/* Outside a block, h2o ends the connection itself. */
			if (s->in_block)
				charge_block(s);
			break;
		case H2_FRAME_RST_STREAM:
			s->reset_frames++;
			s->reset_points -= RESET_COST;
			if (s->reset_points < 0)
				judge(s, H2_TOO_MANY_RESETS);
			else if (s->stream != 0 && s->nresets < H2_MAX_REMEMBERED_RESETS)
				s->resets[s->nresets++] = s->stream;
			break;
		case H2_FRAME_SETTINGS:
		case H2_FRAME_PING:
		case H2_FRAME_PRIORITY:
		case H2_FRAME_WINDOW_UPDATE:
		case H2_FRAME_GOAWAY:
		default:
			/* Unknown types too: h2o skips them, and logs each one. */
			charge_control(s);
			break;
	}
}

/* Reads the frame headers in the next bytes the connection delivered. */
H2Verdict
h2_screen_feed(H2Screen *s, const uint8_t *buf, size_t len)
{
	size_t		off = 0;

	while (off < len && s->verdict == H2_OK)
	{
		if (s->hdr_have < H2_FRAME_HEADER_SIZE)
		{
			size_t		take = H2_FRAME_HEADER_SIZE - s->hdr_have;

			if (take > len - off)
				take = len - off;
			memcpy(s->hdr + s->hdr_have, buf + off, take);
			s->hdr_have += take;
			off += take;
			if (s->hdr_have < H2_FRAME_HEADER_SIZE)
				break;
			s->length = ((uint32_t) s->hdr[0] << 16) | ((uint32_t) s->hdr[1] << 8) | s->hdr[2];
			s->type = s->hdr[3];
			s->flags = s->hdr[4];
			s->stream = (((uint32_t) s->hdr[5] << 24) | ((uint32_t) s->hdr[6] << 16) |
						 ((uint32_t) s->hdr[7] << 8) | s->hdr[8]) & 0x7fffffff;
			s->payload_left = s->length;
			s->want_pad = false;
			charge_frame(s);
		}
		else if (s->want_pad)
		{
			uint32_t	pad = buf[off++];

			s->payload_left--;
			s->want_pad = false;
			/* h2o refuses a pad longer than the payload; call that empty. */
			charge_data(s, pad < s->length ? s->length - 1 - pad : 0);
		}
		else
		{
			size_t		skip = s->payload_left;

			if (skip > len - off)
				skip = len - off;
			s->payload_left -= skip;
			off += skip;
		}
		if (s->hdr_have == H2_FRAME_HEADER_SIZE && s->payload_left == 0 && !s->want_pad)
			s->hdr_have = 0;	/* the frame is complete: the next one starts */
	}
	return s->verdict;
}

/* The next byte fed starts a frame. */
void
h2_screen_resync(H2Screen *s)
{
	s->hdr_have = 0;
	s->payload_left = 0;
	s->want_pad = false;
}

/* h2o has processed every complete frame fed so far. */
void
h2_screen_processed(H2Screen *s)
{
	s->nresets = 0;
}

/* True if an RST_STREAM for stream was fed and not yet processed. */
bool
h2_screen_was_reset(const H2Screen *s, uint32_t stream)
{
	for (int i = 0; i < s->nresets; i++)
		if (s->resets[i] == stream)
			return true;
	return false;
}

/* Notes that a request was answered with body_bytes of body. */
void
h2_screen_answered(H2Screen *s, size_t body_bytes)
{
	size_t		refund = H2_CONTROL_REFUND_PER_REQUEST + body_bytes / H2_CONTROL_REFUND_BYTES;

	if (s->reset_points < s->reset_points_max)
		s->reset_points += RESET_REFUND;
	if (refund > (size_t) (H2_CONTROL_BUDGET - s->control_points))
		s->control_points = H2_CONTROL_BUDGET;
	else
		s->control_points += (int32_t) refund;
}

/* Checks a request's decoded header list size (RFC 7541 section 4.1). */
H2Verdict
h2_screen_header_list(H2Screen *s, size_t list_size)
{
	if (list_size > H2_MAX_HEADER_LIST)
		return judge(s, H2_HEADER_LIST_TOO_LARGE);
	return s->verdict;
}

/* What a verdict means, for the log and the GOAWAY's debug data. */
const char *
h2_screen_reason(H2Verdict v)
{
	switch (v)
	{
		case H2_OK:
			return "ok";
		case H2_TOO_MANY_RESETS:
			return "too many stream resets";
		case H2_TOO_MANY_CONTROL_FRAMES:
			return "too many control frames";
		case H2_HEADER_BLOCK_TOO_LARGE:
			return "header block too large";
		case H2_TOO_MANY_CONTINUATIONS:
			return "too many CONTINUATION frames";
		case H2_HEADER_LIST_TOO_LARGE:
			return "decoded header list too large";
	}
	return "unknown";
}

/* True if s[0..len) is lit, which is lower case, ignoring ASCII case. */
static bool
equals_ci(const char *s, size_t len, const char *lit)
{
	size_t		n = strlen(lit);

	if (len != n)
		return false;
	for (size_t i = 0; i < n; i++)
	{
		char		c = s[i];

		if (c >= 'A' && c <= 'Z')
			c += 'a' - 'A';
		if (c != lit[i])
			return false;
	}
	return true;
}

/* Notes a refusal's status and reason in res; returns false. */
static bool
refuse(ScreenResult *res, int status, const char *reason)
{
	res->status = status;
	res->reason = reason;
	return false;
}

/* Screens a decoded request's pseudo-header fields: see h2_screen.h. */
bool
h2_screen_request(const char *method, size_t method_len, const char *path, size_t path_len,
				  const char *authority, size_t authority_len, size_t nfields, ScreenResult *res)
{
	memset(res, 0, sizeof(*res));
	if (!screen_method(method, method_len, res) ||
		!screen_origin_target(path, path_len, res))
		return false;
	/* HTTP/1.1 refuses a request without Host; :authority is HTTP/2's. */
	if (authority == NULL || authority_len == 0)
		return refuse(res, 400, "no :authority");
	if (!screen_host(authority, authority_len))
		return refuse(res, 400, "an invalid :authority");
	if (nfields > H2_MAX_HEADER_FIELDS)
		return refuse(res, 400, "more header fields than are allowed");
	res->method = method;
	res->method_len = method_len;
	res->target = path;
	res->target_len = path_len;
	return true;
}

/* Screens one field of a decoded request: see h2_screen.h. */
bool
h2_screen_field(const char *name, size_t namelen, const char *value, size_t valuelen,
				ScreenResult *res)
{
	static const char *const connection_specific[] = {
		"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"
	};

	if (!screen_field(name, namelen, value, valuelen, res))
		return false;
	for (size_t i = 0; i < namelen; i++)
		if (name[i] >= 'A' && name[i] <= 'Z')
			return refuse(res, 400, "an upper-case header name");
	if (valuelen > 0 && (value[0] == ' ' || value[0] == '\t' ||
						 value[valuelen - 1] == ' ' || value[valuelen - 1] == '\t'))
		return refuse(res, 400, "whitespace around a header value");
	for (size_t i = 0; i < sizeof(connection_specific) / sizeof(connection_specific[0]); i++)
		if (equals_ci(name, namelen, connection_specific[i]))
			return refuse(res, 400, "a connection-specific header field");
	if (equals_ci(name, namelen, "te") && !equals_ci(value, valuelen, "trailers"))
		return refuse(res, 400, "a TE other than trailers");
	if (equals_ci(name, namelen, "host") && !screen_host(value, valuelen))
		return refuse(res, 400, "an invalid Host header");
	if (equals_ci(name, namelen, "content-length"))
	{
		if (valuelen == 0 || valuelen > SCREEN_MAX_LENGTH_DIGITS)
			return refuse(res, 400, "an invalid Content-Length header");
		for (size_t i = 0; i < valuelen; i++)
			if (value[i] < '0' || value[i] > '9')
				return refuse(res, 400, "an invalid Content-Length header");
	}
	return true;
}
