package io.rocketpipe.interop.grpc;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

/**
 * Recall: a Producer sends {@code kept} and {@code gone} to a {@code message.type=DELAY} topic,
 * both {@code delayMs} ahead, recalls {@code gone} with its receipt's recall handle
 * ({@code Producer.recallMessage}), then sends {@code after}, 2 s later than the others; a
 * SimpleConsumer ({@link Receive}) receives until two bodies arrived: {@code kept} and
 * {@code after} when the recall held. Prints the ids, whether each receipt had a recall
 * handle, the recall receipt's id and the deliveries.
 *
 * <p>Arguments: {@code endpoint topic group delayMs}.
 */
public final class RecallScenario {
    private RecallScenario() {}

    public static void main(String[] args) throws Exception {
        Out.Run run = Out.run(args);
        long delayMs = run.number(3);
        StringBuilder out = new StringBuilder("{");
        try (Producer producer = Out.producer(run.provider(), run.endpoint(), run.topic())) {
            long deliverAt = System.currentTimeMillis() + delayMs;
            String[] bodies = {"kept", "gone", "after"};
            SendReceipt gone = null;
            for (String body : bodies) {
                SendReceipt receipt = producer.send(run.provider().newMessageBuilder()
                    .setTopic(run.topic())
                    .setDeliveryTimestamp(body.equals("after") ? deliverAt + 2000 : deliverAt)
                    .setBody(body.getBytes(StandardCharsets.UTF_8))
                    .build());
                String handle = receipt.getRecallHandle();
                out.append(Out.quote(body)).append(":{\"id\":").append(Out.quote(receipt.getMessageId().toString()))
                    .append(",\"hasHandle\":").append(handle != null && !handle.isEmpty()).append("},");
                if (body.equals("gone")) {
                    gone = receipt;
                    out.append("\"recalled\":").append(Out.quote(
                        producer.recallMessage(run.topic(), gone.getRecallHandle()).getMessageId().toString())).append(',');
                }
            }
        }
        List<String> received = Receive.receive(run.provider(), run.endpoint(), run.group(), run.topic(), 2);
        Out.finish(out.append("\"received\":").append(Out.array(received)).append('}').toString());
    }
}
