package io.rocketpipe.interop.grpc;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientException;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;

/** What the scenarios share: their arguments, the client configuration, a producer and their one JSON line. */
final class Out {
    private Out() {}

    /**
     * The arguments every scenario starts with ({@code endpoint topic group}, then its own from
     * index 3) and the client provider.
     */
    record Run(ClientServiceProvider provider, String endpoint, String topic, String group, String[] args) {
        long number(int index) {
            return Long.parseLong(args[index]);
        }
    }

    static Run run(String[] args) {
        return new Run(ClientServiceProvider.loadService(), args[0], args[1], args[2], args);
    }

    /** Plain HTTP/2 to {@code endpoint}, requests time out after 10 s. */
    static ClientConfiguration config(String endpoint) {
        return ClientConfiguration.newBuilder()
            .setEndpoints(endpoint)
            .enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();
    }

    /** A started Producer of {@code topic} (close it). */
    static Producer producer(ClientServiceProvider provider, String endpoint, String topic) throws ClientException {
        return provider.newProducerBuilder().setClientConfiguration(config(endpoint)).setTopics(topic).build();
    }

    static String body(MessageView view) {
        return StandardCharsets.UTF_8.decode(view.getBody().duplicate()).toString();
    }

    /** A received message: body, id, topic, tag, keys, message group, delivery timestamp (ms, 0 if
     * none), delivery attempt, user properties (sorted), and when it was received (ms). */
    static String view(MessageView v, long receivedAt) {
        StringBuilder out = new StringBuilder("{\"body\":").append(quote(body(v)))
            .append(",\"id\":").append(quote(v.getMessageId().toString()))
            .append(",\"topic\":").append(quote(v.getTopic()))
            .append(",\"tag\":").append(quote(v.getTag().orElse("")))
            .append(",\"keys\":").append(quote(String.join(" ", v.getKeys())))
            .append(",\"group\":").append(quote(v.getMessageGroup().orElse("")))
            .append(",\"deliveryTimestamp\":").append(v.getDeliveryTimestamp().orElse(0L))
            .append(",\"attempt\":").append(v.getDeliveryAttempt())
            .append(",\"receivedAt\":").append(receivedAt)
            .append(",\"properties\":{");
        boolean first = true;
        for (Map.Entry<String, String> p : new TreeMap<>(v.getProperties()).entrySet()) {
            out.append(first ? "" : ",").append(quote(p.getKey())).append(':').append(quote(p.getValue()));
            first = false;
        }
        return out.append("}}").toString();
    }

    /** A JSON array of already-encoded values. */
    static String array(Collection<String> encoded) {
        return "[" + String.join(",", encoded) + "]";
    }

    static String strings(List<String> values) {
        return array(values.stream().map(Out::quote).toList());
    }

    /** Print the JSON line and end the JVM (the clients leave non-daemon threads). */
    static void finish(String json) {
        System.out.println(json);
        System.out.flush();
        System.exit(0);
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
