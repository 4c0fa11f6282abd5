"""Everything askgate itself says to a human, in en / tr / hi."""

from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {
    "en": {
        "submitted": "Answer submitted.",
        "already_answered": "This question was already answered.",
        "expired": "This question has expired.",
        "ended": "This question has ended.",
        "not_allowed": "You are not allowed to answer this question.",
        "other": "Other…",
        "other_prompt": "Type your answer:",
        "skip": "Skip",
        "done": "Done",
        "submit": "Submit",
        "back": "Back",
        "next": "Next",
        "collapse": "Collapse",
        "expand": "Show question",
        "time_left": "Time left",
        "of": "{n} of {total}",
        "choose_many": "(choose one or more)",
        "answered": "Answered: {labels}",
        "summary_timeout": "Expired",
        "summary_cancelled": "Cancelled",
        "summary_run_aborted": "Cancelled",
        "summary_skipped": "Skipped",
        "summary_delivery_failed": "Not delivered",
        "guide_single": "Reply with an option's number or your own answer, or 'skip'.",
        "guide_multi": "Reply with one or more numbers separated by commas (e.g. 1,3) "
        "or your own answer, or 'skip'.",
        "guide_many": "Reply with one line per question, in order, or 'key: answer' "
        "lines; 'skip' skips all.",
        "missing": "Please also answer: {questions}",
        "too_many_lines": "Please reply with one line per question ({count} questions).",
        "free_text": "(your answer)",
        "no_pending": "There is no question waiting for an answer.",
        "link_invalid": "This link is invalid or has expired. Ask the agent for a new one.",
        "timeline_empty": "No questions yet.",
        "composer": "Type a reply…",
        "send": "Send",
        "pick_missing": "Answer this question first.",
    },
    "tr": {
        "submitted": "Cevap gönderildi.",
        "already_answered": "Bu soru zaten cevaplandı.",
        "expired": "Bu sorunun süresi doldu.",
        "ended": "Bu soru sona erdi.",
        "not_allowed": "Bu soruyu cevaplama izniniz yok.",
        "other": "Diğer…",
        "other_prompt": "Cevabınızı yazın:",
        "skip": "Atla",
        "done": "Tamam",
        "submit": "Gönder",
        "back": "Geri",
        "next": "İleri",
        "collapse": "Küçült",
        "expand": "Soruyu göster",
        "time_left": "Kalan süre",
        "of": "{n} / {total}",
        "choose_many": "(bir veya daha fazlasını seçin)",
        "answered": "Cevaplandı: {labels}",
        "summary_timeout": "Süresi doldu",
        "summary_cancelled": "İptal edildi",
        "summary_run_aborted": "İptal edildi",
        "summary_skipped": "Atlandı",
        "summary_delivery_failed": "İletilemedi",
        "guide_single": "Bir seçeneğin numarasını ya da kendi cevabınızı yazın; "
        "geçmek için 'atla' yazın.",
        "guide_multi": "Virgülle ayrılmış bir veya daha fazla numara (ör. 1,3) ya da kendi "
        "cevabınızı yazın; geçmek için 'atla' yazın.",
        "guide_many": "Her soru için sırayla bir satır ya da 'anahtar: cevap' satırları "
        "yazın; 'atla' hepsini geçer.",
        "missing": "Lütfen şunu da cevaplayın: {questions}",
        "too_many_lines": "Lütfen her soru için bir satır yazın ({count} soru).",
        "free_text": "(kendi cevabınız)",
        "no_pending": "Cevap bekleyen bir soru yok.",
        "link_invalid": "Bu bağlantı geçersiz ya da süresi dolmuş. Ajandan yeni bir bağlantı "
        "isteyin.",
        "timeline_empty": "Henüz soru yok.",
        "composer": "Bir cevap yazın…",
        "send": "Gönder",
        "pick_missing": "Önce bu soruyu cevaplayın.",
    },
    "hi": {
        "submitted": "उत्तर भेज दिया गया।",
        "already_answered": "इस प्रश्न का उत्तर पहले ही दिया जा चुका है।",
        "expired": "इस प्रश्न का समय समाप्त हो गया है।",
        "ended": "यह प्रश्न समाप्त हो गया है।",
        "not_allowed": "आपको इस प्रश्न का उत्तर देने की अनुमति नहीं है।",
        "other": "अन्य…",
        "other_prompt": "अपना उत्तर लिखें:",
        "skip": "छोड़ें",
        "done": "हो गया",
        "submit": "भेजें",
        "back": "पीछे",
        "next": "आगे",
        "collapse": "छोटा करें",
        "expand": "प्रश्न दिखाएँ",
        "time_left": "शेष समय",
        "of": "{total} में से {n}",
        "choose_many": "(एक या अधिक चुनें)",
        "answered": "उत्तर दिया गया: {labels}",
        "summary_timeout": "समय समाप्त",
        "summary_cancelled": "रद्द किया गया",
        "summary_run_aborted": "रद्द किया गया",
        "summary_skipped": "छोड़ दिया गया",
        "summary_delivery_failed": "पहुँचाया नहीं जा सका",
        "guide_single": "किसी विकल्प की संख्या या अपना उत्तर लिखें; छोड़ने के लिए 'छोड़ें' लिखें।",
        "guide_multi": "अल्पविराम से अलग एक या अधिक संख्याएँ (जैसे 1,3) या अपना उत्तर लिखें; "
        "छोड़ने के लिए 'छोड़ें' लिखें।",
        "guide_many": "हर प्रश्न के लिए क्रम से एक पंक्ति या 'कुंजी: उत्तर' पंक्तियाँ लिखें; "
        "'छोड़ें' सब छोड़ देता है।",
        "missing": "कृपया इसका भी उत्तर दें: {questions}",
        "too_many_lines": "कृपया हर प्रश्न के लिए एक पंक्ति लिखें ({count} प्रश्न)।",
        "free_text": "(आपका उत्तर)",
        "no_pending": "कोई प्रश्न उत्तर की प्रतीक्षा में नहीं है।",
        "link_invalid": "यह लिंक अमान्य है या इसकी अवधि समाप्त हो गई है। एजेंट से नया लिंक माँगें।",
        "timeline_empty": "अभी कोई प्रश्न नहीं।",
        "composer": "उत्तर लिखें…",
        "send": "भेजें",
        "pick_missing": "पहले इस प्रश्न का उत्तर दें।",
    },
}

# Words that skip the whole ask, in every locale (a Turkish user may still type "skip").
SKIP_WORDS: Final[frozenset[str]] = frozenset({"skip", "atla", "छोड़ें", "/skip"})  # compared after NFC


def t(locale: str, key: str, **kwargs: object) -> str:
    table = MESSAGES.get(locale, MESSAGES["en"])
    text = table.get(key) or MESSAGES["en"][key]
    return text.format(**kwargs) if kwargs else text
