package io.rocketpipe.interop.grpc;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * The official Java gRPC client (rocketmq-client-java) against one endpoint: a Producer sends
 * {@code n} messages {@code m<i>} (tag TagA, key k&lt;i&gt;, property n=i) to {@code topic}, then a
 * SimpleConsumer of {@code group} receives and acknowledges until all arrived ({@link Receive}).
 * Prints one JSON line: the send receipts' message ids and every delivery ({@link Out#view}).
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
        List<String> sent = new ArrayList<>();
        try (Producer producer = Out.producer(provider, endpoint, topic)) {
            for (int i = 0; i < n; i++) {
                Message message = provider.newMessageBuilder()
                    .setTopic(topic)
                    .setTag("TagA")
                    .setKeys("k" + i)
                    .addProperty("n", String.valueOf(i))
                    .setBody(("m" + i).getBytes(StandardCharsets.UTF_8))
                    .build();
                sent.add(producer.send(message).getMessageId().toString());
            }
        }
        List<String> received = Receive.receive(provider, endpoint, group, topic, n);
        Out.finish("{\"sent\":" + Out.strings(sent) + ",\"received\":" + Out.array(received) + "}");
    }
}
