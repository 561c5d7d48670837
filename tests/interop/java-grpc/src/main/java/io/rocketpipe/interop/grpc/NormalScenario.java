package io.rocketpipe.interop.grpc;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

/**
 * The official Java gRPC client (rocketmq-client-java) against one endpoint: a Producer sends
 * {@code n} messages {@code m<i>} (tag TagA, key k&lt;i&gt;, property n=i) to {@code topic}, then a
 * SimpleConsumer of {@code group} receives (long polls of 5 s, 15 s invisible) and acknowledges
 * until all arrived. Prints one JSON line: the send receipts' message ids and what was received.
 *
 * <p>Arguments: {@code endpoint topic group n}.
 */
public final class NormalScenario {
    private NormalScenario() {}

    public static void main(String[] args) throws Exception {
        String endpoint = args[0];
        String topic = args[1];
        String group = args[2];
        int n = Integer.parseInt(args[3]);
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration config = ClientConfiguration.newBuilder()
            .setEndpoints(endpoint)
            .enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();

        List<String> sent = new ArrayList<>();
        try (Producer producer = provider.newProducerBuilder()
            .setClientConfiguration(config)
            .setTopics(topic)
            .build()) {
            for (int i = 0; i < n; i++) {
                Message message = provider.newMessageBuilder()
                    .setTopic(topic)
                    .setTag("TagA")
                    .setKeys("k" + i)
                    .addProperty("n", String.valueOf(i))
                    .setBody(("m" + i).getBytes(StandardCharsets.UTF_8))
                    .build();
                SendReceipt receipt = producer.send(message);
                sent.add(receipt.getMessageId().toString());
            }
        }

        Map<String, MessageView> received = new LinkedHashMap<>();
        try (SimpleConsumer consumer = provider.newSimpleConsumerBuilder()
            .setClientConfiguration(config)
            .setConsumerGroup(group)
            .setAwaitDuration(Duration.ofSeconds(5))
            .setSubscriptionExpressions(Collections.singletonMap(topic, new FilterExpression("*", FilterExpressionType.TAG)))
            .build()) {
            for (int attempt = 0; attempt < 24 && received.size() < n; attempt++) { // each receive long-polls at most 5 s
                for (MessageView view : consumer.receive(16, Duration.ofSeconds(15))) {
                    consumer.ack(view);
                    received.put(StandardCharsets.UTF_8.decode(view.getBody()).toString(), view);
                }
            }
        }

        StringBuilder out = new StringBuilder("{\"sent\":[");
        for (int i = 0; i < sent.size(); i++) {
            out.append(i == 0 ? "" : ",").append(quote(sent.get(i)));
        }
        out.append("],\"received\":[");
        boolean first = true;
        for (Map.Entry<String, MessageView> e : received.entrySet()) {
            MessageView v = e.getValue();
            out.append(first ? "" : ",").append("{\"body\":").append(quote(e.getKey()))
                .append(",\"id\":").append(quote(v.getMessageId().toString()))
                .append(",\"topic\":").append(quote(v.getTopic()))
                .append(",\"tag\":").append(quote(v.getTag().orElse("")))
                .append(",\"keys\":").append(quote(String.join(" ", v.getKeys())))
                .append(",\"attempt\":").append(v.getDeliveryAttempt())
                .append(",\"properties\":{");
            boolean firstProp = true;
            for (Map.Entry<String, String> p : new java.util.TreeMap<>(v.getProperties()).entrySet()) {
                out.append(firstProp ? "" : ",").append(quote(p.getKey())).append(':').append(quote(p.getValue()));
                firstProp = false;
            }
            out.append("}}");
            first = false;
        }
        out.append("]}");
        System.out.println(out);
        System.out.flush();
        System.exit(0); // the client's non-daemon threads
    }

    private static String quote(String s) {
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
