/* Compiled loops of rocketpipe.protocol.message.decode_records, encode_batch, encode_records and
 * string_to_properties, and of the
 * record walk and properties split of rocketpipe.spark.decode (optional; the Python code is the
 * reference and the fallback, and the tests run both).
 *
 * decode(buf, pos, out, cls, hosts, skip) -> int
 *
 * Decodes the commit-log records of `buf` (any contiguous buffer) from `pos` while they are the
 * common kind (MessageDecoder.decode's layout: v1 magic, IPv4 born and store hosts, no sysflag bit
 * of `skip`, every length inside the record, topic and properties valid UTF-8, every property
 * pair with a name and a value), appending cls(topic, body, flag, properties, queue_id,
 * queue_offset, commit_log_offset, store_size, sys_flag, born_timestamp, born_host,
 * store_timestamp, store_host, body_crc, reconsume_times, prepared_transaction_offset,
 * offset_msg_id) to `out` for each. Returns the position of the first record it did not decode
 * (len(buf) when all were): the caller decodes that one with decode_record (which raises the
 * precise ProtocolError for a malformed record) and calls again after it.
 * `hosts` maps an 8-byte IPv4 host field, read as a big-endian unsigned 64-bit number, to
 * ("ip:port", upper-case hex) (message._HOST_CACHE, whose __missing__ fills it).
 * Errors: only MemoryError and the like; a record it cannot decode is left to the caller.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <zlib.h>

#define MAGIC_V1 ((int32_t)0xDAA320A7) /* MessageDecoder.MESSAGE_MAGIC_CODE, -626843481 */
#define BODY_POS 88
#define MIN_RECORD 91
#define N_FIELDS 17

static int32_t be32(const unsigned char *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

static uint64_t be64u(const unsigned char *p) {
    return ((uint64_t)(uint32_t)be32(p) << 32) | (uint64_t)(uint32_t)be32(p + 4);
}

static int has_high_bit(const unsigned char *p, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        if (p[i] & 0x80) return 1;
    }
    return 0;
}

/* str of p[0:n] (UTF-8); NULL with the error cleared (*bad = 1) when not UTF-8, NULL with an
 * error set otherwise. */
static PyObject *text(const unsigned char *p, Py_ssize_t n, int *bad) {
    PyObject *s = PyUnicode_DecodeUTF8((const char *)p, n, "strict");
    if (s == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear();
        *bad = 1;
    }
    return s;
}

/* Property names and values seen in one call: records of one pull repeat the names and most
 * values (WAIT, TAGS, CLUSTER, ...), so each is decoded and hashed once per call. */
#define PAIRS_KEPT 16
typedef struct {
    const unsigned char *name; /* in the buffer, held for the call */
    Py_ssize_t name_len;
    PyObject *name_str;
    const unsigned char *value; /* the last value seen with this name */
    Py_ssize_t value_len;
    PyObject *value_str;
} seen_pair;

typedef struct {
    seen_pair pairs[PAIRS_KEPT];
    int n;
} seen_pairs;

static void seen_clear(seen_pairs *seen) {
    for (int i = 0; i < seen->n; i++) {
        Py_DECREF(seen->pairs[i].name_str);
        Py_XDECREF(seen->pairs[i].value_str);
    }
    seen->n = 0;
}

/* Set d[name] = value for the pair at name[0:nl], value[0:vl]; -1 with *bad = 1 when either is
 * not UTF-8, -1 with an error set otherwise. */
static int set_pair(PyObject *d, seen_pairs *seen, const unsigned char *name, Py_ssize_t nl,
                    const unsigned char *value, Py_ssize_t vl, int *bad) {
    seen_pair *pair = NULL;
    for (int i = 0; i < seen->n; i++) {
        seen_pair *q = &seen->pairs[i];
        if (q->name_len == nl && memcmp(q->name, name, (size_t)nl) == 0) {
            pair = q;
            break;
        }
    }
    if (pair != NULL && pair->value_len == vl && memcmp(pair->value, value, (size_t)vl) == 0) {
        return PyDict_SetItem(d, pair->name_str, pair->value_str);
    }
    PyObject *name_str;
    if (pair != NULL) {
        name_str = Py_NewRef(pair->name_str);
    } else {
        name_str = text(name, nl, bad);
        if (name_str == NULL) return -1;
    }
    PyObject *value_str = text(value, vl, bad);
    if (value_str == NULL) {
        Py_DECREF(name_str);
        return -1;
    }
    int rc = PyDict_SetItem(d, name_str, value_str);
    if (pair == NULL && seen->n < PAIRS_KEPT) {
        pair = &seen->pairs[seen->n++];
        pair->name = name;
        pair->name_len = nl;
        pair->name_str = Py_NewRef(name_str);
        pair->value_str = NULL;
    }
    if (pair != NULL) {
        pair->value = value;
        pair->value_len = vl;
        Py_XSETREF(pair->value_str, Py_NewRef(value_str));
    }
    Py_DECREF(name_str);
    Py_DECREF(value_str);
    return rc;
}

/* The properties p[0:n] as a dict, as string_to_properties' loop: pairs split on \x02, name
 * and value on the first \x01, pairs without a name or a value skipped. NULL with *bad = 1 when
 * a skipped pair is not ASCII (the caller's reference path decides) or a pair is not UTF-8. */
static PyObject *properties(const unsigned char *p, Py_ssize_t n, seen_pairs *seen, int *bad) {
    PyObject *d = PyDict_New();
    if (d == NULL) return NULL;
    Py_ssize_t s = 0;
    while (s <= n && n > 0) {
        const unsigned char *sep = memchr(p + s, 2, (size_t)(n - s));
        Py_ssize_t e = sep == NULL ? n : (Py_ssize_t)(sep - p);
        const unsigned char *eq = memchr(p + s, 1, (size_t)(e - s));
        Py_ssize_t k = eq == NULL ? e : (Py_ssize_t)(eq - p);
        if (k == s || k + 1 >= e) { /* no name or no value: skipped */
            if (has_high_bit(p + s, e - s)) {
                *bad = 1;
                Py_DECREF(d);
                return NULL;
            }
        } else if (set_pair(d, seen, p + s, k - s, p + k + 1, e - k - 1, bad) < 0) {
            Py_DECREF(d);
            return NULL;
        }
        s = e + 1;
    }
    return d;
}

/* hosts[key] as a new reference (a 2-tuple of str), NULL with an error set. */
static PyObject *host_entry(PyObject *hosts, uint64_t key) {
    PyObject *k = PyLong_FromUnsignedLongLong(key);
    if (k == NULL) return NULL;
    PyObject *entry = PyObject_GetItem(hosts, k);
    Py_DECREF(k);
    if (entry != NULL && !(PyTuple_Check(entry) && PyTuple_GET_SIZE(entry) == 2 &&
                           PyUnicode_Check(PyTuple_GET_ITEM(entry, 0)) &&
                           PyUnicode_Check(PyTuple_GET_ITEM(entry, 1)) &&
                           PyUnicode_IS_COMPACT_ASCII(PyTuple_GET_ITEM(entry, 1)))) {
        Py_DECREF(entry);
        PyErr_SetString(PyExc_TypeError, "hosts must map to (str, ASCII hex str)");
        return NULL;
    }
    return entry;
}

/* *held: the entry of host field `key` (looked up when it is not the one *held_key names). */
static int keep_host(PyObject *hosts, uint64_t key, PyObject **held, uint64_t *held_key) {
    if (*held != NULL && *held_key == key) return 0;
    PyObject *entry = host_entry(hosts, key);
    if (entry == NULL) return -1;
    Py_XSETREF(*held, entry);
    *held_key = key;
    return 0;
}

/* store hex + the physical offset as 16 upper-case hex digits (an ASCII str) */
static PyObject *offset_msg_id(PyObject *hex, uint64_t phys) {
    static const char digits[] = "0123456789ABCDEF";
    Py_ssize_t hl = PyUnicode_GET_LENGTH(hex);
    PyObject *s = PyUnicode_New(hl + 16, 127);
    if (s == NULL) return NULL;
    Py_UCS1 *out = PyUnicode_1BYTE_DATA(s);
    memcpy(out, PyUnicode_1BYTE_DATA(hex), (size_t)hl);
    for (int i = 15; i >= 0; i--) {
        out[hl + i] = (Py_UCS1)digits[phys & 0xF];
        phys >>= 4;
    }
    return s;
}

static PyObject *decode(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "decode(buf, pos, out, cls, hosts, skip)");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred()) return NULL;
    PyObject *out = args[2], *cls = args[3], *hosts = args[4];
    long skip = PyLong_AsLong(args[5]);
    if (skip == -1 && PyErr_Occurred()) return NULL;
    if (!PyList_Check(out)) {
        PyErr_SetString(PyExc_TypeError, "out must be a list");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *b = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len;
    PyObject *topic = NULL, *born = NULL, *store = NULL; /* last topic str, host entries */
    Py_ssize_t topic_at = -1, topic_len = 0;
    uint64_t born_key = 0, store_key = 0;
    PyObject *result = NULL;
    seen_pairs seen;
    seen.n = 0;
    if (pos < 0 || pos > n) {
        PyErr_SetString(PyExc_ValueError, "pos out of range");
        goto done;
    }

    while (pos < n && n - pos >= MIN_RECORD) {
        const unsigned char *r = b + pos;
        int32_t total = be32(r);
        int32_t sys_flag = be32(r + 36);
        int32_t blen = be32(r + 84);
        if (be32(r + 4) != MAGIC_V1 || (sys_flag & skip) || total < MIN_RECORD || total > n - pos ||
            blen < 0 || blen > total - BODY_POS - 1) {
            break;
        }
        Py_ssize_t p = BODY_POS + blen;
        Py_ssize_t tlen = r[p];
        if (tlen > total - BODY_POS - blen - 3) break;
        p += 1;
        const unsigned char *tb = r + p;
        p += tlen;
        if (r[p] >= 0x80) break;
        Py_ssize_t plen = ((Py_ssize_t)r[p] << 8) | r[p + 1];
        p += 2;
        if (plen > total - p) break;

        int bad = 0;
        if (topic == NULL || tlen != topic_len || memcmp(b + topic_at, tb, (size_t)tlen) != 0) {
            PyObject *t = text(tb, tlen, &bad);
            if (t == NULL) {
                if (bad) break;
                goto done;
            }
            Py_XSETREF(topic, t);
            topic_at = tb - b;
            topic_len = tlen;
        }
        PyObject *props = properties(r + p, plen, &seen, &bad);
        if (props == NULL) {
            if (bad) break;
            goto done;
        }
        if (keep_host(hosts, be64u(r + 48), &born, &born_key) < 0 ||
            keep_host(hosts, be64u(r + 64), &store, &store_key) < 0) {
            Py_DECREF(props);
            goto done;
        }
        int64_t poff = (int64_t)be64u(r + 28);
        PyObject *f[N_FIELDS];
        f[0] = Py_NewRef(topic);
        f[1] = PyBytes_FromStringAndSize((const char *)r + BODY_POS, blen);
        f[2] = PyLong_FromLong(be32(r + 16));
        f[3] = props;
        f[4] = PyLong_FromLong(be32(r + 12));
        f[5] = PyLong_FromLongLong((int64_t)be64u(r + 20));
        f[6] = PyLong_FromLongLong(poff);
        f[7] = PyLong_FromLong(total);
        f[8] = PyLong_FromLong(sys_flag);
        f[9] = PyLong_FromLongLong((int64_t)be64u(r + 40));
        f[10] = Py_NewRef(PyTuple_GET_ITEM(born, 0));
        f[11] = PyLong_FromLongLong((int64_t)be64u(r + 56));
        f[12] = Py_NewRef(PyTuple_GET_ITEM(store, 0));
        f[13] = PyLong_FromLong(be32(r + 8));
        f[14] = PyLong_FromLong(be32(r + 72));
        f[15] = PyLong_FromLongLong((int64_t)be64u(r + 76));
        f[16] = offset_msg_id(PyTuple_GET_ITEM(store, 1), (uint64_t)poff);
        PyObject *msg = NULL;
        int ok = 1;
        for (int i = 0; i < N_FIELDS; i++) ok &= f[i] != NULL;
        if (ok) msg = PyObject_Vectorcall(cls, f, N_FIELDS, NULL);
        for (int i = 0; i < N_FIELDS; i++) Py_XDECREF(f[i]);
        if (msg == NULL) goto done;
        int rc = PyList_Append(out, msg);
        Py_DECREF(msg);
        if (rc < 0) goto done;
        pos += total;
    }
    result = PyLong_FromSsize_t(pos);
done:
    seen_clear(&seen);
    Py_XDECREF(topic);
    Py_XDECREF(born);
    Py_XDECREF(store);
    PyBuffer_Release(&view);
    return result;
}

/* ----------------------------------------------------------------------------------------------
 * encode_batch(messages) -> bytes | None
 *
 * The SEND_BATCH_MESSAGE body of `messages` (any sequence of objects with .properties, .body,
 * .flag), byte for byte what message.encode_batch's Python loop gives (MessageDecoder
 * .encodeMessages: per message TOTALSIZE, MAGICCODE 0, BODYCRC 0, FLAG, BODYLENGTH, body,
 * PROPERTIES LENGTH, "name\1value\2"... in the dict's order, None values left out). Returns
 * None, with no error set, when a message is not the common kind: properties not an exact dict
 * of exact str (None values apart), body not exact bytes, flag not an int32, properties over
 * 32767 bytes or not encodable as UTF-8. The Python loop then encodes the batch (and raises the
 * precise error). Attributes are all read before any size is computed, so no Python code runs
 * between measuring and writing.
 */
typedef struct {
    PyObject *props; /* new reference */
    PyObject *body;  /* new reference */
    int32_t flag;
    Py_ssize_t plen;
} batch_entry;

static void put32(unsigned char *p, int32_t v) {
    uint32_t u = (uint32_t)v;
    p[0] = (unsigned char)(u >> 24);
    p[1] = (unsigned char)(u >> 16);
    p[2] = (unsigned char)(u >> 8);
    p[3] = (unsigned char)u;
}

/* UTF-8 size of the properties string, or -1 when not the common kind (no error set). */
static Py_ssize_t props_size(PyObject *props) {
    Py_ssize_t pos = 0, total = 0, n;
    PyObject *k, *v;
    while (PyDict_Next(props, &pos, &k, &v)) {
        if (v == Py_None) continue;
        if (!PyUnicode_CheckExact(k) || !PyUnicode_CheckExact(v)) return -1;
        if (PyUnicode_AsUTF8AndSize(k, &n) == NULL) goto bad;
        total += n + 1;
        if (PyUnicode_AsUTF8AndSize(v, &n) == NULL) goto bad;
        total += n + 1;
        if (total > 32767) return -1;
    }
    return total;
bad:
    PyErr_Clear(); /* a lone surrogate: the Python loop raises UnicodeEncodeError */
    return -1;
}

static unsigned char *put_props(unsigned char *w, PyObject *props) {
    Py_ssize_t pos = 0, n;
    PyObject *k, *v;
    const char *s;
    while (PyDict_Next(props, &pos, &k, &v)) {
        if (v == Py_None) continue;
        s = PyUnicode_AsUTF8AndSize(k, &n); /* cached by props_size: cannot fail now */
        memcpy(w, s, (size_t)n);
        w += n;
        *w++ = 1;
        s = PyUnicode_AsUTF8AndSize(v, &n);
        memcpy(w, s, (size_t)n);
        w += n;
        *w++ = 2;
    }
    return w;
}

static PyObject *encode_batch(PyObject *self, PyObject *messages) {
    (void)self;
    static PyObject *s_properties, *s_body, *s_flag;
    if (s_properties == NULL) {
        s_properties = PyUnicode_InternFromString("properties");
        s_body = PyUnicode_InternFromString("body");
        s_flag = PyUnicode_InternFromString("flag");
        if (s_properties == NULL || s_body == NULL || s_flag == NULL) return NULL;
    }
    PyObject *seq = PySequence_Fast(messages, "encode_batch(messages): a sequence");
    if (seq == NULL) return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq), filled = 0, total = 0;
    PyObject *result = NULL;
    batch_entry *entries = PyMem_Calloc(count ? (size_t)count : 1, sizeof(batch_entry));
    if (entries == NULL) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (; filled < count; filled++) { /* every attribute read (may run Python code) first */
        PyObject *m = PySequence_Fast_GET_ITEM(seq, filled);
        batch_entry *e = &entries[filled];
        e->props = PyObject_GetAttr(m, s_properties);
        if (e->props == NULL) goto done;
        e->body = PyObject_GetAttr(m, s_body);
        if (e->body == NULL) goto done;
        PyObject *flag = PyObject_GetAttr(m, s_flag);
        if (flag == NULL) goto done;
        int overflow = 0;
        long f = PyLong_CheckExact(flag) ? PyLong_AsLongAndOverflow(flag, &overflow) : -1;
        int is_int = PyLong_CheckExact(flag);
        Py_DECREF(flag);
        if (f == -1 && PyErr_Occurred()) goto done;
        if (!is_int || overflow || f < INT32_MIN || f > INT32_MAX || !PyDict_CheckExact(e->props) ||
            !PyBytes_CheckExact(e->body))
            goto fallback;
        e->flag = (int32_t)f;
    }
    for (Py_ssize_t i = 0; i < count; i++) { /* no Python code runs from here on */
        batch_entry *e = &entries[i];
        e->plen = props_size(e->props);
        if (e->plen < 0) goto fallback;
        Py_ssize_t blen = PyBytes_GET_SIZE(e->body);
        if (blen > INT32_MAX - 22 - e->plen || total > PY_SSIZE_T_MAX - 22 - blen - e->plen) goto fallback;
        total += 22 + blen + e->plen;
    }
    result = PyBytes_FromStringAndSize(NULL, total);
    if (result == NULL) goto done;
    unsigned char *w = (unsigned char *)PyBytes_AS_STRING(result);
    for (Py_ssize_t i = 0; i < count; i++) {
        batch_entry *e = &entries[i];
        Py_ssize_t blen = PyBytes_GET_SIZE(e->body);
        put32(w, (int32_t)(22 + blen + e->plen));
        memset(w + 4, 0, 8); /* MAGICCODE, BODYCRC */
        put32(w + 12, e->flag);
        put32(w + 16, (int32_t)blen);
        w += 20;
        memcpy(w, PyBytes_AS_STRING(e->body), (size_t)blen);
        w += blen;
        w[0] = (unsigned char)(e->plen >> 8);
        w[1] = (unsigned char)e->plen;
        w = put_props(w + 2, e->props);
    }
    goto done;
fallback:
    result = Py_NewRef(Py_None);
done:
    for (Py_ssize_t i = 0; i < count && i <= filled; i++) {
        Py_XDECREF(entries[i].props);
        Py_XDECREF(entries[i].body);
    }
    PyMem_Free(entries);
    Py_DECREF(seq);
    return result;
}

/* ----------------------------------------------------------------------------------------------
 * string_to_properties(s: str) -> dict
 *
 * rocketpipe.protocol.message.string_to_properties: split at \x02, each pair's name ends at its
 * first \x01, pairs with an empty name or value dropped, the last of equal names winning
 * (MessageDecoder.string2messageProperties). Errors: TypeError (not a str), MemoryError.
 */
static PyObject *string_to_properties(PyObject *self, PyObject *s) {
    (void)self;
    if (!PyUnicode_Check(s)) {
        PyErr_SetString(PyExc_TypeError, "string_to_properties(s): a str");
        return NULL;
    }
    PyObject *out = PyDict_New();
    if (out == NULL) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(s), start = 0;
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    while (start < n) {
        Py_ssize_t end = start, sep = -1;
        for (; end < n; end++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, end);
            if (c == 2) break;
            if (c == 1 && sep < 0) sep = end;
        }
        if (sep > start && sep < end - 1) { /* a name and a value */
            PyObject *k = PyUnicode_Substring(s, start, sep);
            PyObject *v = k == NULL ? NULL : PyUnicode_Substring(s, sep + 1, end);
            int r = v == NULL ? -1 : PyDict_SetItem(out, k, v);
            Py_XDECREF(k);
            Py_XDECREF(v);
            if (r < 0) {
                Py_DECREF(out);
                return NULL;
            }
        }
        start = end + 1;
    }
    return out;
}

/* ----------------------------------------------------------------------------------------------
 * encode_records(msgs, tail, hosts, queue_id, queue_offset, physical_offset, store_timestamp)
 *     -> (records, dispatched, next_queue_offset, total) | None
 *
 * The loop of rocketpipe.protocol.message.encode_records for the common records: v1 magic (the
 * topic part `tail`, its length byte then its UTF-8 name, is at most 128 bytes), IPv4 born and
 * store hosts found in `hosts` ("ip:port" -> 8-byte field, message._V4_HOSTS), bytes bodies,
 * properties a dict of str -> str (None values skipped) or a str, at most 32767 bytes of UTF-8,
 * and int fields that fit their widths. One record per message, as encode_record writes it at
 * queue offset `queue_offset` + i and physical offset `physical_offset` + the bytes before it;
 * prepared and rollback transaction records (sysflag bits 0xC = 0x4 or 0xC) get queue offset 0
 * and no queue slot (dispatched False), as DefaultAppendMessageCallback.doAppend. Returns None,
 * before any record is kept, when a message is not of that kind: the Python loop then encodes
 * the put (and raises what it raises). Errors: only MemoryError and the like.
 */
static int int_field(PyObject *m, PyObject *name, int64_t lo, int64_t hi, int64_t *out) {
    /* 1: read; 0: not an int in [lo, hi] (no error set); -1: error */
    PyObject *v = PyObject_GetAttr(m, name);
    if (v == NULL) return -1;
    int ok = 0;
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred()) {
            Py_DECREF(v);
            return -1;
        }
        if (!overflow && x >= lo && x <= hi) {
            *out = (int64_t)x;
            ok = 1;
        }
    }
    Py_DECREF(v);
    return ok;
}

static const char *host_field(PyObject *m, PyObject *name, PyObject *hosts, int *bad) {
    /* the 8-byte host field of m.<name> from `hosts`; NULL: *bad = 1 (not there) or an error */
    PyObject *host = PyObject_GetAttr(m, name);
    if (host == NULL) return NULL;
    PyObject *field = PyUnicode_CheckExact(host) ? PyDict_GetItemWithError(hosts, host) : NULL;
    Py_DECREF(host);
    if (field == NULL || !PyBytes_CheckExact(field) || PyBytes_GET_SIZE(field) != 8) {
        if (!PyErr_Occurred()) *bad = 1;
        return NULL;
    }
    return PyBytes_AS_STRING(field); /* `hosts` keeps it alive for the call */
}

static void put64(unsigned char *p, int64_t v) {
    put32(p, (int32_t)(uint32_t)((uint64_t)v >> 32));
    put32(p + 4, (int32_t)(uint32_t)(uint64_t)v);
}

static PyObject *encode_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    static PyObject *s_body, *s_flag, *s_properties, *s_sys_flag, *s_born_timestamp, *s_born_host, *s_store_host,
        *s_reconsume_times, *s_prepared;
    if (s_body == NULL) {
        s_body = PyUnicode_InternFromString("body");
        s_flag = PyUnicode_InternFromString("flag");
        s_properties = PyUnicode_InternFromString("properties");
        s_sys_flag = PyUnicode_InternFromString("sys_flag");
        s_born_timestamp = PyUnicode_InternFromString("born_timestamp");
        s_born_host = PyUnicode_InternFromString("born_host");
        s_store_host = PyUnicode_InternFromString("store_host");
        s_reconsume_times = PyUnicode_InternFromString("reconsume_times");
        s_prepared = PyUnicode_InternFromString("prepared_transaction_offset");
        if (!s_body || !s_flag || !s_properties || !s_sys_flag || !s_born_timestamp || !s_born_host ||
            !s_store_host || !s_reconsume_times || !s_prepared)
            return NULL;
    }
    if (nargs != 7 || !PyBytes_Check(args[1]) || !PyDict_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError,
                        "encode_records(msgs, tail: bytes, hosts: dict, queue_id, queue_offset, "
                        "physical_offset, store_timestamp)");
        return NULL;
    }
    PyObject *tail = args[1], *hosts = args[2];
    long long queue_id = PyLong_AsLongLong(args[3]);
    long long qo = PyLong_AsLongLong(args[4]);
    long long phys = PyLong_AsLongLong(args[5]);
    long long now = PyLong_AsLongLong(args[6]);
    if (PyErr_Occurred()) return NULL;
    Py_ssize_t tlen = PyBytes_GET_SIZE(tail);
    if (tlen < 1 || tlen > 128 || queue_id < INT32_MIN || queue_id > INT32_MAX) Py_RETURN_NONE;
    PyObject *seq = PySequence_Fast(args[0], "encode_records(msgs): a sequence");
    if (seq == NULL) return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    PyObject *records = PyList_New(count), *dispatched = PyList_New(count), *result = NULL;
    PyObject *body = NULL, *props = NULL;
    if (records == NULL || dispatched == NULL) goto done;
    long long start = phys;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *m = PySequence_Fast_GET_ITEM(seq, i);
        int64_t flag, sys_flag, born_ts, reconsume, prepared;
        int r;
        if ((r = int_field(m, s_flag, INT32_MIN, INT32_MAX, &flag)) <= 0 ||
            (r = int_field(m, s_sys_flag, INT32_MIN, INT32_MAX, &sys_flag)) <= 0 ||
            (r = int_field(m, s_born_timestamp, INT64_MIN, INT64_MAX, &born_ts)) <= 0 ||
            (r = int_field(m, s_reconsume_times, INT32_MIN, INT32_MAX, &reconsume)) <= 0 ||
            (r = int_field(m, s_prepared, INT64_MIN, INT64_MAX, &prepared)) <= 0) {
            if (r < 0) goto done;
            goto fallback;
        }
        int bad = 0;
        const char *born = host_field(m, s_born_host, hosts, &bad);
        const char *store = born == NULL ? NULL : host_field(m, s_store_host, hosts, &bad);
        if (store == NULL) {
            if (bad) goto fallback;
            goto done;
        }
        body = PyObject_GetAttr(m, s_body);
        if (body == NULL) goto done;
        props = PyObject_GetAttr(m, s_properties);
        if (props == NULL) goto done;
        if (!PyBytes_CheckExact(body)) goto fallback;
        Py_ssize_t plen;
        const char *pstr = NULL;
        if (PyDict_CheckExact(props)) {
            plen = props_size(props);
            if (plen < 0) goto fallback;
        } else if (PyUnicode_CheckExact(props)) {
            pstr = PyUnicode_AsUTF8AndSize(props, &plen);
            if (pstr == NULL) {
                PyErr_Clear(); /* a lone surrogate: the Python loop raises UnicodeEncodeError */
                goto fallback;
            }
            if (plen > 32767) goto fallback;
        } else {
            goto fallback;
        }
        Py_ssize_t blen = PyBytes_GET_SIZE(body);
        if (blen > INT32_MAX - 90 - tlen - plen) goto fallback;
        Py_ssize_t size = 90 + blen + tlen + plen;
        PyObject *rec = PyBytes_FromStringAndSize(NULL, size);
        if (rec == NULL) goto done;
        unsigned char *w = (unsigned char *)PyBytes_AS_STRING(rec);
        const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(body);
        int64_t type = sys_flag & 0xC;
        int dispatch = type == 0x0 || type == 0x8; /* TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE */
        put32(w, (int32_t)size);
        put32(w + 4, (int32_t)0xDAA320A7); /* MAGIC_V1 */
        put32(w + 8, (int32_t)(crc32(0L, b, (uInt)blen) & 0x7FFFFFFF));
        put32(w + 12, (int32_t)queue_id);
        put32(w + 16, (int32_t)flag);
        put64(w + 20, dispatch ? (int64_t)qo : 0);
        put64(w + 28, (int64_t)phys);
        put32(w + 36, (int32_t)(sys_flag & ~(int64_t)0x30)); /* no BORNHOST/STOREHOST_V6_FLAG */
        put64(w + 40, born_ts);
        memcpy(w + 48, born, 8);
        put64(w + 56, (int64_t)now);
        memcpy(w + 64, store, 8);
        put32(w + 72, (int32_t)reconsume);
        put64(w + 76, prepared);
        put32(w + 84, (int32_t)blen);
        memcpy(w + 88, b, (size_t)blen);
        w += 88 + blen;
        memcpy(w, PyBytes_AS_STRING(tail), (size_t)tlen);
        w += tlen;
        w[0] = (unsigned char)(plen >> 8);
        w[1] = (unsigned char)plen;
        if (pstr != NULL) memcpy(w + 2, pstr, (size_t)plen);
        else put_props(w + 2, props);
        PyList_SET_ITEM(records, i, rec);
        PyList_SET_ITEM(dispatched, i, Py_NewRef(dispatch ? Py_True : Py_False));
        Py_CLEAR(body);
        Py_CLEAR(props);
        phys += size;
        if (dispatch) qo += 1;
    }
    result = Py_BuildValue("(OOLL)", records, dispatched, qo, phys - start);
    goto done;
fallback:
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(body);
    Py_XDECREF(props);
    Py_XDECREF(records);
    Py_XDECREF(dispatched);
    Py_DECREF(seq);
    return result;
}

/* ----------------------------------------------------------------------------------------------
 * Column-wise helpers of rocketpipe.spark.decode (numpy/pyarrow assemble the columns).
 *
 * record_starts(buf) -> bytes | None
 *   The start of every record of `buf` (records back to back) as native int64s; None when a
 *   size field is below the 91-byte minimum, truncated, or runs past the buffer (the Python
 *   walk then raises the precise ProtocolError).
 *
 * split_properties(buf, pos, lens) -> (offsets, (name_offsets, name_data),
 *                                      (value_offsets, value_data), picks) | None
 *   The properties strings buf[pos[i]:pos[i] + lens[i]] (pos, lens: contiguous native int64
 *   arrays of one length n) split as MessageDecoder.string2messageProperties does: pairs end at
 *   \x02, the name ends at the first \x01, pairs with an empty name or value are dropped, and
 *   of pairs with equal names in one string only the last is kept (HashMap.put), at its place.
 *   offsets: n + 1 int32 (string i's pairs are [offsets[i], offsets[i + 1])); the kept pairs'
 *   names and values as Arrow string buffers (int32 offsets, UTF-8 data); picks: 3 * n int64,
 *   the kept pair of TAGS, then KEYS, then UNIQ_KEY of each string, -1 when absent. None when a
 *   string is not valid UTF-8 (the Python path raises) or has more than PAIRS_COMPARED pairs
 *   (the Python path splits it). Errors: ValueError for ranges outside
 *   buf, arrays of different lengths, or more than 2**31 - 1 bytes of names or values.
 */
typedef struct {
    int64_t *v;
    Py_ssize_t n, cap;
} i64_vec;

static int vec_push(i64_vec *vec, int64_t x) {
    if (vec->n == vec->cap) {
        Py_ssize_t cap = vec->cap ? vec->cap * 2 : 1024;
        int64_t *v = PyMem_Realloc(vec->v, (size_t)cap * sizeof(int64_t));
        if (v == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        vec->v = v;
        vec->cap = cap;
    }
    vec->v[vec->n++] = x;
    return 0;
}

static PyObject *vec_bytes(const i64_vec *vec) {
    return PyBytes_FromStringAndSize((const char *)vec->v, vec->n * (Py_ssize_t)sizeof(int64_t));
}

static PyObject *record_starts(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *b = view.buf;
    Py_ssize_t n = view.len, pos = 0;
    i64_vec starts = {NULL, 0, 0};
    PyObject *result = NULL;
    while (pos < n) {
        if (n - pos < 4) goto fallback;
        int32_t total = be32(b + pos);
        if (total < MIN_RECORD || total > n - pos) goto fallback;
        if (vec_push(&starts, pos) < 0) goto done;
        pos += total;
    }
    result = vec_bytes(&starts);
    goto done;
fallback:
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(starts.v);
    PyBuffer_Release(&view);
    return result;
}

/* Most pairs one properties string may have for split_properties, whose duplicate check compares
 * every pair with the later ones; a string with more (at most ~8,000 fit in 32767 bytes) is left
 * to the reference's hash-based split. Stored messages carry about 5 to 15. */
#define PAIRS_COMPARED 256

static int is_name(const unsigned char *p, Py_ssize_t n, const char *name) {
    return (size_t)n == strlen(name) && memcmp(p, name, (size_t)n) == 0;
}

/* A growable byte buffer with the int32 offsets of the strings appended to it (Arrow's
 * string layout: offsets[0] = 0, string k is data[offsets[k]:offsets[k + 1]]). */
typedef struct {
    char *data;
    Py_ssize_t len, cap;
    i64_vec offsets;
} str_column;

static int column_add(str_column *col, const unsigned char *p, Py_ssize_t n) {
    if (col->offsets.n == 0 && vec_push(&col->offsets, 0) < 0) return -1;
    if (col->len + n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "properties of more than 2**31 - 1 bytes");
        return -1;
    }
    if (col->len + n > col->cap) {
        Py_ssize_t cap = col->cap ? col->cap : 4096;
        while (cap < col->len + n) cap *= 2;
        char *data = PyMem_Realloc(col->data, (size_t)cap);
        if (data == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        col->data = data;
        col->cap = cap;
    }
    memcpy(col->data + col->len, p, (size_t)n);
    col->len += n;
    return vec_push(&col->offsets, col->len);
}

/* (offsets as int32 bytes, data bytes) of a column */
static PyObject *column_buffers(str_column *col) {
    if (col->offsets.n == 0 && vec_push(&col->offsets, 0) < 0) return NULL;
    PyObject *off = PyBytes_FromStringAndSize(NULL, col->offsets.n * (Py_ssize_t)sizeof(int32_t));
    if (off == NULL) return NULL;
    int32_t *o = (int32_t *)PyBytes_AS_STRING(off);
    for (Py_ssize_t k = 0; k < col->offsets.n; k++) o[k] = (int32_t)col->offsets.v[k];
    PyObject *data = PyBytes_FromStringAndSize(col->data, col->len);
    PyObject *pair = data == NULL ? NULL : PyTuple_Pack(2, off, data);
    Py_DECREF(off);
    Py_XDECREF(data);
    return pair;
}

static PyObject *split_properties(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "split_properties(buf, pos, lens)");
        return NULL;
    }
    Py_buffer view, posv, lenv;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(args[1], &posv, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    if (PyObject_GetBuffer(args[2], &lenv, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&posv);
        PyBuffer_Release(&view);
        return NULL;
    }
    PyObject *result = NULL, *offsets = NULL;
    str_column names = {NULL, 0, 0, {NULL, 0, 0}}, values = {NULL, 0, 0, {NULL, 0, 0}};
    i64_vec cand[4] = {{NULL, 0, 0}, {NULL, 0, 0}, {NULL, 0, 0}, {NULL, 0, 0}}; /* one string's pairs */
    int64_t *picks = NULL;
    const unsigned char *b = view.buf;
    Py_ssize_t blen = view.len, n = posv.len / (Py_ssize_t)sizeof(int64_t), kept = 0;
    if (posv.itemsize != 8 || lenv.itemsize != 8 || posv.len != lenv.len) {
        PyErr_SetString(PyExc_ValueError, "pos and lens must be int64 arrays of one length");
        goto done;
    }
    const int64_t *pos = posv.buf, *lens = lenv.buf;
    offsets = PyBytes_FromStringAndSize(NULL, (n + 1) * (Py_ssize_t)sizeof(int32_t));
    picks = PyMem_Malloc((size_t)(3 * n + 1) * sizeof(int64_t));
    if (offsets == NULL || picks == NULL) {
        if (picks == NULL) PyErr_NoMemory();
        goto done;
    }
    int32_t *off = (int32_t *)PyBytes_AS_STRING(offsets);
    off[0] = 0;
    for (Py_ssize_t r = 0; r < n; r++) {
        int64_t p = pos[r], len = lens[r];
        if (p < 0 || len < 0 || p > blen || len > blen - p) {
            PyErr_SetString(PyExc_ValueError, "a properties range runs outside the buffer");
            goto done;
        }
        const unsigned char *s = b + p;
        if (has_high_bit(s, (Py_ssize_t)len)) {
            PyObject *u = PyUnicode_DecodeUTF8((const char *)s, (Py_ssize_t)len, "strict");
            if (u == NULL) {
                if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) goto done;
                PyErr_Clear();
                result = Py_NewRef(Py_None);
                goto done;
            }
            Py_DECREF(u);
        }
        for (int k = 0; k < 4; k++) cand[k].n = 0;
        int64_t i = 0;
        while (i < len) {
            const unsigned char *sep = memchr(s + i, 2, (size_t)(len - i));
            int64_t end = sep == NULL ? len : (int64_t)(sep - s);
            const unsigned char *kv = memchr(s + i, 1, (size_t)(end - i));
            if (kv != NULL) {
                int64_t k = (int64_t)(kv - s);
                if (k > i && k < end - 1 &&
                    (vec_push(&cand[0], i) < 0 || vec_push(&cand[1], k - i) < 0 || vec_push(&cand[2], k + 1) < 0 ||
                     vec_push(&cand[3], end - k - 1) < 0))
                    goto done;
            }
            i = end + 1;
        }
        if (cand[0].n > PAIRS_COMPARED) { /* the duplicate check is quadratic: the reference's */
            result = Py_NewRef(Py_None);
            goto done;
        }
        int64_t *pick = picks + r;
        pick[0] = pick[n] = pick[2 * n] = -1;
        for (Py_ssize_t j = 0; j < cand[0].n; j++) {
            const unsigned char *name = s + cand[0].v[j];
            int64_t nl = cand[1].v[j];
            int later = 0;
            for (Py_ssize_t q = j + 1; q < cand[0].n && !later; q++) {
                later = cand[1].v[q] == nl && memcmp(s + cand[0].v[q], name, (size_t)nl) == 0;
            }
            if (later) continue;
            if (column_add(&names, name, (Py_ssize_t)nl) < 0 ||
                column_add(&values, s + cand[2].v[j], (Py_ssize_t)cand[3].v[j]) < 0)
                goto done;
            if (is_name(name, nl, "TAGS")) pick[0] = kept;
            else if (is_name(name, nl, "KEYS")) pick[n] = kept;
            else if (is_name(name, nl, "UNIQ_KEY")) pick[2 * n] = kept;
            kept++;
        }
        if (kept > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "more than 2**31 - 1 properties");
            goto done;
        }
        off[r + 1] = (int32_t)kept;
    }
    {
        PyObject *parts[3] = {column_buffers(&names), column_buffers(&values),
                              PyBytes_FromStringAndSize((const char *)picks, 3 * n * (Py_ssize_t)sizeof(int64_t))};
        if (parts[0] && parts[1] && parts[2]) result = PyTuple_Pack(4, offsets, parts[0], parts[1], parts[2]);
        for (int k = 0; k < 3; k++) Py_XDECREF(parts[k]);
    }
done:
    Py_XDECREF(offsets);
    PyMem_Free(picks);
    PyMem_Free(names.data);
    PyMem_Free(names.offsets.v);
    PyMem_Free(values.data);
    PyMem_Free(values.offsets.v);
    for (int k = 0; k < 4; k++) PyMem_Free(cand[k].v);
    PyBuffer_Release(&lenv);
    PyBuffer_Release(&posv);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"decode", (PyCFunction)(void (*)(void))decode, METH_FASTCALL,
     "decode(buf, pos, out, cls, hosts, skip) -> position of the first record not decoded"},
    {"encode_batch", (PyCFunction)encode_batch, METH_O,
     "encode_batch(messages) -> SEND_BATCH_MESSAGE body, or None for the Python loop to encode"},
    {"encode_records", (PyCFunction)(void (*)(void))encode_records, METH_FASTCALL,
     "encode_records(msgs, tail, hosts, queue_id, queue_offset, physical_offset, store_timestamp) -> "
     "(records, dispatched, next_queue_offset, total), or None for the Python loop"},
    {"string_to_properties", (PyCFunction)string_to_properties, METH_O,
     "string_to_properties(s) -> dict of the name/value pairs (string2messageProperties' rules)"},
    {"record_starts", (PyCFunction)record_starts, METH_O,
     "record_starts(buf) -> int64 starts of the records as bytes, or None for the Python walk"},
    {"split_properties", (PyCFunction)(void (*)(void))split_properties, METH_FASTCALL,
     "split_properties(buf, pos, lens) -> (offsets, names, values, picks) or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_records", NULL, 0, methods};

PyMODINIT_FUNC PyInit__records(void) { return PyModule_Create(&module); }
