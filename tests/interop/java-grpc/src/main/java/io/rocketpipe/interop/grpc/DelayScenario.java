package io.rocketpipe.interop.grpc;

import java.nio.charset.StandardCharsets;
import java.util.List;
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
        Out.Run run = Out.run(args);
        long delayMs = run.number(3);
        String id;
        long deliverAt;
        long sentAt;
        try (Producer producer = Out.producer(run.provider(), run.endpoint(), run.topic())) {
            deliverAt = System.currentTimeMillis() + delayMs;
            id = producer.send(run.provider().newMessageBuilder()
                .setTopic(run.topic())
                .setDeliveryTimestamp(deliverAt)
                .setBody("later".getBytes(StandardCharsets.UTF_8))
                .build()).getMessageId().toString();
            sentAt = System.currentTimeMillis();
        }
        List<String> received = Receive.receive(run.provider(), run.endpoint(), run.group(), run.topic(), 1);
        Out.finish("{\"id\":" + Out.quote(id) + ",\"deliverAt\":" + deliverAt + ",\"sentAt\":" + sentAt
            + ",\"received\":" + Out.array(received) + "}");
    }
}
