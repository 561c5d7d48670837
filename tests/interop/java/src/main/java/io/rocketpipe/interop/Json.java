package io.rocketpipe.interop;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/** A tiny JSON writer (no dependency on the client's JSON library) and result helpers. */
final class Json {
    private Json() {
    }

    static String write(Object o) {
        StringBuilder sb = new StringBuilder();
        write(sb, o);
        return sb.toString();
    }

    @SuppressWarnings("unchecked")
    private static void write(StringBuilder sb, Object o) {
        if (o == null) {
            sb.append("null");
        } else if (o instanceof String) {
            str(sb, (String) o);
        } else if (o instanceof Number || o instanceof Boolean) {
            sb.append(o);
        } else if (o instanceof Map) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<Object, Object> e : ((Map<Object, Object>) o).entrySet()) {
                if (!first) sb.append(',');
                first = false;
                str(sb, String.valueOf(e.getKey()));
                sb.append(':');
                write(sb, e.getValue());
            }
            sb.append('}');
        } else if (o instanceof Collection) {
            sb.append('[');
            boolean first = true;
            for (Object x : (Collection<Object>) o) {
                if (!first) sb.append(',');
                first = false;
                write(sb, x);
            }
            sb.append(']');
        } else {
            str(sb, String.valueOf(o));
        }
    }

    private static void str(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        sb.append('"');
    }

    static Map<String, Object> obj() {
        return new LinkedHashMap<>();
    }

    static List<Object> list() {
        return new ArrayList<>();
    }

    static Map<String, Object> mq(MessageQueue mq) {
        Map<String, Object> m = obj();
        m.put("topic", mq.getTopic());
        m.put("brokerName", mq.getBrokerName());
        m.put("queueId", mq.getQueueId());
        return m;
    }

    static Map<String, Object> sendResult(SendResult r) {
        Map<String, Object> m = obj();
        m.put("status", r.getSendStatus().name());
        m.put("msgId", r.getMsgId());
        m.put("offsetMsgId", r.getOffsetMsgId());
        m.put("queue", mq(r.getMessageQueue()));
        m.put("queueOffset", r.getQueueOffset());
        m.put("regionId", r.getRegionId());
        return m;
    }

    static Map<String, Object> message(MessageExt e) {
        Map<String, Object> m = obj();
        m.put("topic", e.getTopic());
        m.put("msgId", e.getMsgId());
        m.put("offsetMsgId", e.getProperty("UNIQ_KEY") == null ? e.getMsgId() : null);
        m.put("body", new String(e.getBody(), StandardCharsets.UTF_8));
        m.put("tags", e.getTags());
        m.put("keys", e.getKeys());
        m.put("properties", new TreeMap<>(e.getProperties()));
        m.put("queueId", e.getQueueId());
        m.put("queueOffset", e.getQueueOffset());
        m.put("reconsumeTimes", e.getReconsumeTimes());
        m.put("storeHost", String.valueOf(e.getStoreHost()));
        m.put("bornTimestamp", e.getBornTimestamp());
        m.put("storeTimestamp", e.getStoreTimestamp());
        m.put("sysFlag", e.getSysFlag());
        m.put("bodyCRC", e.getBodyCRC());
        m.put("brokerName", e.getBrokerName());
        m.put("delayLevel", e.getDelayTimeLevel());
        return m;
    }

    /** The exception and its causes, one line: "e | caused by: c1 | caused by: c2". */
    static String error(Throwable e) {
        StringBuilder sb = new StringBuilder(String.valueOf(e));
        for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
            sb.append(" | caused by: ").append(c);
        }
        return sb.toString();
    }

    static void print(Object o) {
        System.out.flush();
        System.out.println(write(o));
        System.out.flush();
    }
}
