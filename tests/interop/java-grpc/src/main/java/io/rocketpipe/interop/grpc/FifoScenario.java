package io.rocketpipe.interop.grpc;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * FIFO messages: a Producer sends {@code <g>-<i>} for i in 0..4, interleaved across the message
 * groups {@code ga} and {@code gb}, to a {@code message.type=FIFO} topic; a SimpleConsumer of the
 * (orderly) {@code group} receives and acknowledges all ten ({@link Receive}). Prints the send
 * receipts' message ids (in send order) and every delivery.
 *
 * <p>Arguments: {@code endpoint topic group}.
 */
public final class FifoScenario {
    private FifoScenario() {}

    public static void main(String[] args) throws Exception {
        Out.Run run = Out.run(args);
        List<String> sent = new ArrayList<>();
        try (Producer producer = Out.producer(run.provider(), run.endpoint(), run.topic())) {
            for (int i = 0; i < 5; i++) {
                for (String messageGroup : new String[] {"ga", "gb"}) {
                    sent.add(producer.send(run.provider().newMessageBuilder()
                        .setTopic(run.topic())
                        .setMessageGroup(messageGroup)
                        .setBody((messageGroup + "-" + i).getBytes(StandardCharsets.UTF_8))
                        .build()).getMessageId().toString());
                }
            }
        }
        List<String> received = Receive.receive(run.provider(), run.endpoint(), run.group(), run.topic(), 10);
        Out.finish("{\"sent\":" + Out.strings(sent) + ",\"received\":" + Out.array(received) + "}");
    }
}
