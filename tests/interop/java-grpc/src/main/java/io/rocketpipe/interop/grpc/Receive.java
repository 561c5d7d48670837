package io.rocketpipe.interop.grpc;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;

/** A SimpleConsumer that receives (long polls of 5 s, 15 s invisible) and acknowledges each
 * message at once, until {@code want} distinct bodies arrived or 24 receives passed. */
final class Receive {
    private Receive() {}

    /** Every delivery, as {@link Out#view} JSON objects, in arrival order. */
    static List<String> receive(ClientServiceProvider provider, String endpoint, String group, String topic, int want)
        throws Exception {
        List<String> got = new ArrayList<>();
        Set<String> bodies = new HashSet<>();
        try (SimpleConsumer consumer = provider.newSimpleConsumerBuilder()
            .setClientConfiguration(Out.config(endpoint))
            .setConsumerGroup(group)
            .setAwaitDuration(Duration.ofSeconds(5))
            .setSubscriptionExpressions(Collections.singletonMap(topic, new FilterExpression("*", FilterExpressionType.TAG)))
            .build()) {
            for (int attempt = 0; attempt < 24 && bodies.size() < want; attempt++) {
                for (MessageView view : consumer.receive(16, Duration.ofSeconds(15))) {
                    got.add(Out.view(view, System.currentTimeMillis()));
                    bodies.add(Out.body(view));
                    consumer.ack(view);
                }
            }
        }
        return got;
    }
}
