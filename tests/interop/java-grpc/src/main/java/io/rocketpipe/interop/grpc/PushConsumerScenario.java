package io.rocketpipe.interop.grpc;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * A PushConsumer: a Producer sends {@code p<i>} for i below {@code n}; a PushConsumer of
 * {@code group} consumes them (SUCCESS each) until every body was seen or 60 s passed. Prints the
 * send receipts' ids and, per body, the delivery attempts seen.
 *
 * <p>Arguments: {@code endpoint topic group n}.
 */
public final class PushConsumerScenario {
    private PushConsumerScenario() {}

    public static void main(String[] args) throws Exception {
        Out.Run run = Out.run(args);
        int n = (int) run.number(3);
        List<String> sent = new ArrayList<>();
        try (Producer producer = Out.producer(run.provider(), run.endpoint(), run.topic())) {
            for (int i = 0; i < n; i++) {
                sent.add(producer.send(run.provider().newMessageBuilder()
                    .setTopic(run.topic())
                    .setTag("TagA")
                    .setBody(("p" + i).getBytes(StandardCharsets.UTF_8))
                    .build()).getMessageId().toString());
            }
        }
        ConcurrentHashMap<String, List<Integer>> seen = new ConcurrentHashMap<>();
        CountDownLatch all = new CountDownLatch(n);
        try (PushConsumer consumer = run.provider().newPushConsumerBuilder()
            .setClientConfiguration(Out.config(run.endpoint()))
            .setConsumerGroup(run.group())
            .setSubscriptionExpressions(Collections.singletonMap(run.topic(), new FilterExpression("*", FilterExpressionType.TAG)))
            .setMessageListener(view -> {
                List<Integer> attempts = seen.computeIfAbsent(Out.body(view), k -> Collections.synchronizedList(new ArrayList<>()));
                attempts.add(view.getDeliveryAttempt());
                if (attempts.size() == 1) {
                    all.countDown();
                }
                return ConsumeResult.SUCCESS;
            })
            .build()) {
            all.await(60, TimeUnit.SECONDS);
        }
        List<String> attempts = new ArrayList<>();
        for (var e : new java.util.TreeMap<>(seen).entrySet()) {
            attempts.add(Out.quote(e.getKey()) + ":" + e.getValue());
        }
        Out.finish("{\"sent\":" + Out.strings(sent) + ",\"attempts\":{" + String.join(",", attempts) + "}}");
    }
}
