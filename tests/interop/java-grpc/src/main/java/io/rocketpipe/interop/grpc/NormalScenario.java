package io.rocketpipe.interop.grpc;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
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
        Out.Run run = Out.run(args);
        int n = (int) run.number(3);
        List<String> sent = new ArrayList<>();
        try (Producer producer = Out.producer(run.provider(), run.endpoint(), run.topic())) {
            for (int i = 0; i < n; i++) {
                Message message = run.provider().newMessageBuilder()
                    .setTopic(run.topic())
                    .setTag("TagA")
                    .setKeys("k" + i)
                    .addProperty("n", String.valueOf(i))
                    .setBody(("m" + i).getBytes(StandardCharsets.UTF_8))
                    .build();
                sent.add(producer.send(message).getMessageId().toString());
            }
        }
        List<String> received = Receive.receive(run.provider(), run.endpoint(), run.group(), run.topic(), n);
        Out.finish("{\"sent\":" + Out.strings(sent) + ",\"received\":" + Out.array(received) + "}");
    }
}
