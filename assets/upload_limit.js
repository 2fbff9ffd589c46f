// Uploads. Refuse a model file over the server's upload limit before the browser sends it:
// the server would answer a request that large with HTTP 413, which a page cannot show.
// The message is the one the server gives a file just under the limit's size check.
(function () {
    function limit() {
        var el = document.getElementById("upload-limit");
        return el ? parseInt(el.getAttribute("data-bytes"), 10) : NaN;
    }
    function size(n) {
        return n >= 1048576 ? (n / 1048576).toFixed(1) + " MB" : (n / 1024).toFixed(1) + " KB";
    }
    function tooLarge(files) {
        var max = limit();
        if (!files || isNaN(max)) { return null; }
        for (var i = 0; i < files.length; i++) {
            if (files[i].size > max) { return files[i]; }
        }
        return null;
    }
    function refuse(event, file) {
        event.preventDefault();
        event.stopImmediatePropagation();
        var msg = "error: " + file.name + ": is " + size(file.size) + ", over the " + size(limit()) +
                  " upload limit";
        if (window.dash_clientside && window.dash_clientside.set_props) {
            window.dash_clientside.set_props("model-status", {children: msg});
            window.dash_clientside.set_props("alert", {children: msg, className: "alert"});
        }
        if (event.target && event.target.value !== undefined && event.target.type === "file") {
            event.target.value = "";
        }
    }
    function inUpload(target) {
        return target && target.closest && target.closest("#model-upload");
    }
    document.addEventListener("change", function (event) {
        if (!inUpload(event.target)) { return; }
        var file = tooLarge(event.target.files);
        if (file) { refuse(event, file); }
    }, true);
    // Any file input of the page: once its change has been read (dcc.Upload reads the files
    // as the event passes), its value is emptied, so choosing the same file again is a change
    // too (a browser fires none for the value it already holds: a broken file chosen twice
    // said nothing the second time).
    document.addEventListener("change", function (event) {
        var input = event.target;
        if (input && input.type === "file") {
            setTimeout(function () { input.value = ""; }, 0);
        }
    });
    document.addEventListener("drop", function (event) {
        if (!inUpload(event.target)) { return; }
        var file = tooLarge(event.dataTransfer && event.dataTransfer.files);
        if (file) { refuse(event, file); }
    }, true);
})();
