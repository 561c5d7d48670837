package io.rocketpipe.interop.grpc;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * A delay message: a Producer sends {@code later} to a {@code message.type=DELAY} topic with a
 * delivery timestamp {@code delayMs} after the send; a SimpleConsumer receives it
 * ({@link Receive}). Prints the message id, the delivery timestamp asked (ms), when the send
 * returned (ms) and every delivery (with when it arrived).
 *
 * <p>Arguments: {@code endpoint topic group delayMs}.
 */
public final class DelayScenario {
    private DelayScenario() {}

    public static void main(String[] args) throws Exception {
        String endpoint = args[0];
        String topic = args[1];
        String group = args[2];
        long delayMs = Long.parseLong(args[3]);
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        String id;
        long deliverAt;
        long sentAt;
        try (Producer producer = Out.producer(provider, endpoint, topic)) {
            deliverAt = System.currentTimeMillis() + delayMs;
            id = producer.send(provider.newMessageBuilder()
                .setTopic(topic)
                .setDeliveryTimestamp(deliverAt)
                .setBody("later".getBytes(StandardCharsets.UTF_8))
                .build()).getMessageId().toString();
            sentAt = System.currentTimeMillis();
        }
        List<String> received = Receive.receive(provider, endpoint, group, topic, 1);
        Out.finish("{\"id\":" + Out.quote(id) + ",\"deliverAt\":" + deliverAt + ",\"sentAt\":" + sentAt
            + ",\"received\":" + Out.array(received) + "}");
    }
}
