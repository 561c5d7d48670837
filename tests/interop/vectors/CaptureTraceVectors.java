/*
 * Golden vectors of the message-trace text format from the official Apache RocketMQ 5.3.3 client
 * (org.apache.rocketmq.client.trace.TraceDataEncoder): one context of each trace type with fixed
 * inputs (Pub with and without tags / keys, SubBefore and SubAfter of a two-message batch,
 * EndTransaction, Recall), and what TraceDataEncoder.decoderFromTraceDataString makes of a Pub
 * followed by a SubAfter. Writes tests/vectors/java_trace/trace_data.txt: per vector one line
 * "name<TAB>data<TAB>keys", where data has \x01 (CONTENT_SPLITOR) and \x02 (FIELD_SPLITOR)
 * written as those four characters and keys is the sorted TraceTransferBean.transKey joined by
 * commas; "decoded" lines list the decoder's fields. Read by
 * tests/unit/client/test_client_trace_codec.py. Capture command (repository root; the 5.3.3 jars
 * cached in ~/.m2 by the interop suite):
 *
 *   mvn -B -q -o -f tests/interop/java/pom.xml -Drocketmq.version=5.3.3 dependency:build-classpath -Dmdep.outputFile=/tmp/rmq-cp.txt
 *   java -Dcapture.date=$(date -u +%F) -cp "$(cat /tmp/rmq-cp.txt)" tests/interop/vectors/CaptureTraceVectors.java tests/vectors/java_trace
 *
 * Captured on 2026-11-25 with OpenJDK 17.
 */
import java.io.File;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.rocketmq.client.AccessChannel;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.trace.TraceBean;
import org.apache.rocketmq.client.trace.TraceContext;
import org.apache.rocketmq.client.trace.TraceDataEncoder;
import org.apache.rocketmq.client.trace.TraceTransferBean;
import org.apache.rocketmq.client.trace.TraceType;
import org.apache.rocketmq.common.message.MessageType;

public class CaptureTraceVectors {
    static String esc(String s) {
        return s.replace("\u0001", "\\x01").replace("\u0002", "\\x02");
    }

    static void line(PrintWriter w, String name, TraceContext c) {
        TraceTransferBean b = TraceDataEncoder.encoderFromContextBean(c);
        List<String> keys = new ArrayList<>(b.getTransKey());
        Collections.sort(keys);
        w.println(name + "\t" + esc(b.getTransData()) + "\t" + String.join(",", keys));
    }

    static TraceContext ctx(TraceType t, long ts, String region, String group, TraceBean... beans) {
        TraceContext c = new TraceContext();
        c.setTraceType(t);
        c.setTimeStamp(ts);
        c.setRegionId(region);
        c.setGroupName(group);
        c.setTraceBeans(new ArrayList<>(List.of(beans)));
        return c;
    }

    public static void main(String[] args) throws Exception {
        File out = new File(args[0], "trace_data.txt");
        try (PrintWriter w = new PrintWriter(out, StandardCharsets.UTF_8)) {
            w.println("# TraceDataEncoder of rocketmq-client 5.3.3 (tests/interop/vectors/CaptureTraceVectors.java), "
                + "captured " + System.getProperty("capture.date", "?") + " with Java " + System.getProperty("java.version"));
            TraceBean b = new TraceBean();
            b.setTopic("TopicA");
            b.setMsgId("7F00000100002A9F0000000000000001");
            b.setTags("TagA");
            b.setKeys("k1 k2");
            b.setStoreHost("127.0.0.1:10911");
            b.setBodyLength(5);
            b.setMsgType(MessageType.Normal_Msg);
            b.setOffsetMsgId("7F00000100002A9F00000000000000C8");
            TraceContext pub = ctx(TraceType.Pub, 1700000000123L, "DefaultRegion", "pg", b);
            pub.setCostTime(3);
            pub.setSuccess(true);
            line(w, "pub", pub);

            TraceBean b2 = new TraceBean();
            b2.setTopic("TopicB");
            b2.setMsgId("ID2");
            b2.setTags(null);
            b2.setKeys(null);
            b2.setStoreHost("10.0.0.1:10911");
            b2.setMsgType(MessageType.Delay_Msg);
            b2.setOffsetMsgId("OFF2");
            TraceContext pub2 = ctx(TraceType.Pub, 1700000000200L, "r1", "pg2", b2);
            pub2.setSuccess(false);
            line(w, "pub_nulls", pub2);

            TraceBean s1 = new TraceBean();
            s1.setMsgId("ID1");
            s1.setKeys("k1");
            TraceBean s2 = new TraceBean();
            s2.setMsgId("ID2");
            s2.setRetryTimes(2);
            s2.setKeys(null);
            TraceContext sb = ctx(TraceType.SubBefore, 1700000001000L, "DefaultRegion", "cg", s1, s2);
            sb.setRequestId("REQ1");
            line(w, "sub_before", sb);

            TraceContext sa = ctx(TraceType.SubAfter, 1700000001010L, "DefaultRegion", "cg", s1, s2);
            sa.setRequestId("REQ1");
            sa.setCostTime(7);
            sa.setSuccess(true);
            sa.setContextCode(4);
            sa.setAccessChannel(AccessChannel.LOCAL);
            line(w, "sub_after", sa);

            TraceBean e = new TraceBean();
            e.setTopic("TxTopic");
            e.setMsgId("TXID");
            e.setTags("T");
            e.setKeys("tk");
            e.setStoreHost("127.0.0.1:10911");
            e.setMsgType(MessageType.Trans_msg_Commit);
            e.setTransactionId("TXID");
            e.setTransactionState(LocalTransactionState.COMMIT_MESSAGE);
            e.setFromTransactionCheck(true);
            line(w, "end_transaction", ctx(TraceType.EndTransaction, 1700000002000L, "DefaultRegion", "tpg", e));

            TraceBean r = new TraceBean();
            r.setTopic("TopicA");
            r.setMsgId("RID");
            TraceContext rc = ctx(TraceType.Recall, 1700000003000L, "DefaultRegion", "pg", r);
            rc.setSuccess(false);
            line(w, "recall", rc);

            String data = TraceDataEncoder.encoderFromContextBean(pub).getTransData()
                + TraceDataEncoder.encoderFromContextBean(sa).getTransData();
            for (TraceContext c : TraceDataEncoder.decoderFromTraceDataString(data)) {
                TraceBean x = c.getTraceBeans().get(0);
                w.println("decoded\t" + c.getTraceType() + "\t" + c.getTimeStamp() + "\t" + c.getRegionId() + "\t"
                    + c.getGroupName() + "\t" + c.getCostTime() + "\t" + c.isSuccess() + "\t"
                    + (c.getTraceType() == TraceType.Pub ? "-" : c.getRequestId()) + "\t" + c.getContextCode() + "\t"
                    + x.getMsgId() + "\t" + x.getKeys() + "\t" + x.getTags() + "\t" + x.getOffsetMsgId());
            }
        }
    }
}
